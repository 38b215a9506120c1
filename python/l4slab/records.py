"""A run's per-request and closed-flow records, streamed instead of held.

A run with traffic sources (web requests) can close tens of thousands of connections.
Its engine streams their records in bounded chunks into spill files in a temporary
directory (the binding's ``SpillSink``: one line per chunk, a JSON array of about
``RECORD_CHUNK`` records plus any a long-open request held back,
``requests-<source>.jsonl`` and ``flow_records.jsonl``);
:class:`RecordSpill` turns each file into Parquet one chunk (one row group) at a time,
so neither the engine nor Python holds all of a run's records, and the results JSON
stays the same size however long the run. ``RunResult.requests`` and
``RunResult.flow_records`` read the Parquet files back (the same DataFrames as the
in-memory path builds); :func:`l4slab.rundir.write_run` copies them into the run
directory atomically. The directory is removed with the :class:`RecordSpill`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["RecordSpill", "requests_frame"]

#: Rows per Parquet row group: engine chunks are gathered (as Arrow tables, ~200 bytes a
#: row) up to this many before a row group is written, so the files compress as well as
#: one written whole while memory stays bounded.
ROW_GROUP_ROWS = 16384

#: Parquet files a spill holds after :meth:`RecordSpill.convert`.
REQUESTS = "requests.parquet"
FLOW_RECORDS = "flow_records.parquet"


def requests_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per web request: the engine's ``RequestRecord`` fields; ``fct_s`` and
    ``efficiency`` float with NaN for a request that did not complete."""
    frame = pd.DataFrame(records)
    frame["fct_s"] = frame["fct_s"].astype(float)
    frame["efficiency"] = frame["efficiency"].astype(float)
    return frame


def _chunks_to_parquet(sources: list[Path], out: Path, to_frame: Callable[[list[Any]], pd.DataFrame]) -> int:
    """Write the chunk lines of ``sources`` (in order) into ``out``, a row group per
    :data:`ROW_GROUP_ROWS` rows; return the number of rows (0: no file written)."""
    writer: pq.ParquetWriter | None = None
    schema: pa.Schema | None = None
    pending: list[pa.Table] = []
    rows = 0

    def flush() -> None:
        if pending:
            assert writer is not None
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
            pending.clear()

    try:
        for source in sources:
            with open(source, "rb") as lines:
                for line in lines:
                    chunk = json.loads(line)
                    if not chunk:
                        continue
                    table = pa.Table.from_pandas(to_frame(chunk), preserve_index=False)
                    if writer is None:
                        schema = table.schema
                        writer = pq.ParquetWriter(out, schema)
                    else:
                        table = table.cast(schema)
                    pending.append(table)
                    rows += table.num_rows
                    if sum(t.num_rows for t in pending) >= ROW_GROUP_ROWS:
                        flush()
            source.unlink()
        flush()
    finally:
        if writer is not None:
            writer.close()
    return rows


#: Spill directories are ``<tmp>/l4slab-records-<pid>-<random>``: the owner's pid lets a
#: later spill remove the directory of a process that was killed (SIGKILL skips every
#: finalizer) while leaving a live process's alone.
SPILL_PREFIX = "l4slab-records-"


def remove_dead_spills(parent: Path | None = None) -> list[Path]:
    """Remove the spill directories whose owner process is gone; return them."""
    from .io import pid_alive

    removed = []
    for directory in Path(parent or tempfile.gettempdir()).glob(f"{SPILL_PREFIX}*-*"):
        pid = directory.name[len(SPILL_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)) or not directory.is_dir():
            continue
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed


class RecordSpill:
    """A temporary directory the engine streams a run's records into; removed when this
    object is garbage-collected (or by :meth:`cleanup`), and by the next spill of any
    process when its owner was killed (:func:`remove_dead_spills`)."""

    def __init__(self) -> None:
        remove_dead_spills()
        self.path = Path(tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), ignore_errors=True)

    def __getstate__(self) -> dict[str, bytes]:
        """A pickled or deep-copied spill carries its converted Parquet files, so a copy
        (e.g. a ``RunResult`` returned from a worker process) owns its own directory and
        does not depend on the original's lifetime."""
        self._check_present()
        files = [self.path / name for name in (REQUESTS, FLOW_RECORDS)]
        return {path.name: path.read_bytes() for path in files if path.exists()}

    def __setstate__(self, files: dict[str, bytes]) -> None:
        self.__init__()
        for name, data in files.items():
            (self.path / name).write_bytes(data)

    def _check_present(self) -> None:
        if not self.path.is_dir():
            raise RuntimeError(f"the run's streamed records in {self.path} were removed (RecordSpill.cleanup)")

    def convert(self, flows_frame: Callable[[list[Any]], pd.DataFrame]) -> None:
        """Turn the engine's spill files into ``requests.parquet`` (web sources in their
        order in ``sources``, each in arrival order) and ``flow_records.parquet``
        (rows built by ``flows_frame``, :func:`l4slab.results.flows_frame`)."""
        requests = sorted(self.path.glob("requests-*.jsonl"), key=lambda p: int(p.stem.split("-", 1)[1]))
        _chunks_to_parquet(requests, self.path / REQUESTS, requests_frame)
        closed = [p for p in [self.path / "flow_records.jsonl"] if p.exists()]
        _chunks_to_parquet(closed, self.path / FLOW_RECORDS, flows_frame)

    def parquet(self, name: str) -> Path | None:
        """The converted Parquet file ``name`` (``requests.parquet`` or
        ``flow_records.parquet``), or None when the run had no such records; an error
        once the spill has been removed, rather than an empty answer."""
        self._check_present()
        path = self.path / name
        return path if path.exists() else None

    def cleanup(self) -> None:
        self._finalizer()
