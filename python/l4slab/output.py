"""Writing a run to a directory, one file at a time, atomically.

Each file is written to a temporary file in the destination directory and then
``os.replace``d over its final name, so a reader (or a crashed run) never sees a
half-written file: a name either does not exist or holds a complete file.
``summary.json`` is written last, so its presence marks a complete run directory.

Files (schema in docs/outputs.md):

* ``scenario.json``: the resolved engine config (base units), enough to re-run;
* ``flows.parquet``: one row per flow (the summary's flow entries);
* ``flow_series.parquet``: per-flow time series, long format;
* ``bottleneck_series.parquet``: bottleneck time series;
* ``sojourn.parquet``: per-packet sojourn trace (only with ``trace_sojourn``);
* ``meta.json``: wall time and versions (not deterministic, hence not in the summary);
* ``summary.json``: the fixed-schema summary scripts read.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pandas as pd

if TYPE_CHECKING:
    from .runner import RunResult

__all__ = ["atomic_write", "write_json", "write_parquet", "write_text", "write_run", "OUTPUT_FILES"]

OUTPUT_FILES = (
    "scenario.json",
    "flows.parquet",
    "flow_series.parquet",
    "bottleneck_series.parquet",
    "sojourn.parquet",
    "meta.json",
    "summary.json",
)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@lru_cache(maxsize=1)
def _file_mode() -> int:
    """Permissions a plain ``open()`` would give (mkstemp creates files 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded.

    ``write`` receives a path in the same directory (so the final rename cannot
    cross file systems). On any exception the temporary file is removed and the
    previous content of ``path``, if any, is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp_name)
    try:
        write(tmp_path)
        with open(tmp_path, "rb+") as written:
            os.fsync(written.fileno())
        os.chmod(tmp_path, _file_mode())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Strict JSON (NaN is refused: callers convert it to null), 2-space indented."""
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_parquet(path: str | os.PathLike[str], frame: pd.DataFrame) -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))


def write_run(result: "RunResult", out_dir: str | os.PathLike[str]) -> Path:
    """Write every output file of ``result`` into ``out_dir``; return the directory.

    A stale ``sojourn.parquet`` from an earlier run in the same directory is removed
    when this run has no trace, so the directory always describes one run.
    """
    from . import __version__

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
    write_json(
        directory / "meta.json",
        {
            "wall_s": result.wall_s,
            "engine_version": result.engine_version,
            "l4slab_version": __version__,
            "python_version": platform.python_version(),
            "platform": platform.platform(),
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
    )
    write_json(summary_path, result.summary)
    return directory
