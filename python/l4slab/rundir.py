"""A run directory: the files one run writes, and the order that makes it complete.

Every file is written atomically (:mod:`l4slab.io`); ``summary.json`` is written last
(and removed first), so its presence marks a complete run directory.

Files (schema in docs/outputs.md):

* ``scenario.json``: the resolved engine config (base units), enough to re-run;
* ``flows.parquet``: one row per flow (the summary's flow entries);
* ``flow_series.parquet``: per-flow time series, long format;
* ``bottleneck_series.parquet``: bottleneck time series;
* ``sojourn.parquet``: per-packet sojourn trace (only with ``trace_sojourn``);
* ``flow_records.parquet``: one row per flow that closed during the run (only when a
  traffic source reuses flow slots);
* ``requests.parquet``: one row per web request (only with a ``kind = "web"`` source);
* ``meta.json``: wall time and versions (not deterministic, hence not in the summary);
* ``summary.json``: the fixed-schema summary scripts read.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
from pathlib import Path
from typing import Any

from .io import atomic_write, write_bytes, write_json, write_parquet
from .version import PACKAGE_VERSION

__all__ = ["write_run", "OUTPUT_FILES"]

OUTPUT_FILES = (
    "scenario.json",
    "flows.parquet",
    "flow_series.parquet",
    "bottleneck_series.parquet",
    "sojourn.parquet",
    "flow_records.parquet",
    "requests.parquet",
    "meta.json",
    "summary.json",
)


def write_run(result: Any, out_dir: str | os.PathLike[str]) -> Path:
    """Write every output file of ``result`` (a :class:`l4slab.results.RunResult`) into
    ``out_dir``; return the directory.

    A stale ``sojourn.parquet`` or writer's file (``capture.pcapng``) from an earlier run
    in the same directory is removed when this run has none, so the directory always
    describes one run.
    """
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    summary_path = directory / "summary.json"
    # The old summary goes first: until the new one lands, the directory is "incomplete".
    summary_path.unlink(missing_ok=True)

    write_json(directory / "scenario.json", result.config)
    write_parquet(directory / "flows.parquet", result.flows)
    write_parquet(directory / "flow_series.parquet", result.flow_series)
    write_parquet(directory / "bottleneck_series.parquet", result.bottleneck_series)
    sojourn = result.sojourn
    if sojourn is not None:
        write_parquet(directory / "sojourn.parquet", sojourn)
    else:
        (directory / "sojourn.parquet").unlink(missing_ok=True)
    # The measurement writers' files (e.g. capture.pcapng), by name; those an earlier run in
    # this directory wrote (its meta.json lists them) and this one did not are removed.
    files = dict(getattr(result, "files", None) or {})
    for name in _written_files(directory) - set(files):
        (directory / name).unlink(missing_ok=True)
    for name, data in files.items():
        write_bytes(directory / name, data)
    for name, frame in (("flow_records.parquet", "flow_records"), ("requests.parquet", "requests")):
        _write_records(result, directory / name, frame)
    write_json(
        directory / "meta.json",
        {
            "wall_s": result.wall_s,
            "engine_version": result.engine_version,
            "l4slab_version": PACKAGE_VERSION,
            "python_version": platform.python_version(),
            "platform": platform.platform(),
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "files": sorted(files),
        },
    )
    write_json(summary_path, result.summary)
    return directory


def _written_files(directory: Path) -> set[str]:
    """The writers' files of the run last written into ``directory`` (its ``meta.json``
    ``files``; plain names only, nothing outside the directory)."""
    import json

    try:
        names = json.loads((directory / "meta.json").read_text(encoding="utf-8")).get("files") or []
    except (OSError, ValueError, AttributeError):
        return set()
    return {n for n in names if isinstance(n, str) and n and Path(n).name == n and n not in OUTPUT_FILES}


def _write_records(result: Any, target: Path, frame: str) -> None:
    """A run's per-request (or closed-flow) records: the Parquet file they were streamed
    into (:mod:`l4slab.records`), copied atomically a block at a time, else the in-memory
    DataFrame ``result.<frame>``; no file when the run has none."""
    spill = getattr(result, "records", None)
    if spill is not None:
        streamed = spill.parquet(target.name)
        if streamed is not None:
            atomic_write(target, lambda tmp: shutil.copyfile(streamed, tmp))
            return
        records = None
    else:
        records = getattr(result, frame)
    if records is not None:
        write_parquet(target, records)
    else:
        target.unlink(missing_ok=True)
