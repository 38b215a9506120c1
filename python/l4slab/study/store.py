"""The results store of a study directory.

Layout (``STUDY_DIR``)::

    study.toml          the study file as given (copy)
    plan.json           the expanded study: factors, points (scenario + engine config), runs
    runs/<id>.parquet   one file per finished run (source of truth), written atomically
    failed/<id>.json    the error of a run that failed (removed when it succeeds)
    catalog.duckdb      tables runs, flows, bottleneck, classes, summaries (rebuildable)

A run file is one Parquet table holding several logical tables: a ``table`` column
names the table of each row (``flows``, ``bottleneck``, ``classes``, ``flow_series``,
``bottleneck_series``, and ``requests`` for runs with web traffic) and every other column
is ``<table>.<column>`` (null in the other tables' rows, which Parquet stores for almost
nothing). The schema metadata key ``l4slab.study.run`` holds the run's identity as JSON (id, study, point, point key,
factor values, trial, seed, wall_s, engine and l4slab versions, ``"complete": true``);
a file that pyarrow cannot read, or without that key, or whose id differs from its
name, is not a finished run and is run again.

Verification: every run file carries two checksums. The schema
metadata key ``l4slab.study.sha256`` holds :func:`content_digest` of its decoded
contents (identity JSON and every column's values), and ``records.jsonl`` in the study
directory gets one line ``{"id", "sha256", "bytes"}`` with the sha256 of the file's
bytes, appended when the file is placed. Parquet page checksums (CRC32 of each data
page) are written and verified on every read. A run counts as done only when its bytes
match their record or, for a file with no record (a ``run-one`` elsewhere, a lost
``records.jsonl``), its page CRCs and content digest agree (:func:`verify_run_file`);
``study run`` moves a file that fails into ``runs/corrupt/``, names it on one warning
line and runs it again; readers skip it (and say so) or raise one line
(:class:`CorruptRunFile`) — none returns changed values.

``id`` = sha256 of the resolved engine config's digest (seed included), the engine's
model (version and corpus digest) and the backend (:func:`l4slab.study.spec.run_id`).
A run file's identity records the config's digest, the model and the backend, and every
reader recomputes the id from them: a file whose identity does not hash to its name is
left out with one line. ``plan.json`` carries its own checksum (:func:`plan_checksum`),
checked on every read.
"""

from __future__ import annotations

import datetime as _dt
import errno
import hashlib
import io
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ScenarioError
from ..io import MAX_RUN_FILE_BYTES, atomic_write, read_input, remove_leftovers, write_bytes, write_json
from ..limits import show
from ..results import CC_STATE_SERIES, flows_frame

__all__ = [
    "META_KEY",
    "CHECKSUM_KEY",
    "TABLES",
    "CorruptRunFile",
    "RUN_ID",
    "run_file_bytes",
    "write_run_file",
    "read_run_meta",
    "read_run_table",
    "verify_run_file",
    "run_status",
    "rebuild_catalog",
    "Prepared",
    "catalog_stale",
    "CatalogError",
    "load_plan",
    "plan_checksum",
]

META_KEY = b"l4slab.study.run"
CHECKSUM_KEY = b"l4slab.study.sha256"
TABLES = ("flows", "bottleneck", "classes", "flow_series", "bottleneck_series", "requests")
SUMMARY_TABLES = ("flows", "bottleneck", "classes")
RECORDS = "records.jsonl"
#: A run id: the sha256 hex digest of its config (``spec.run_id``); nothing else names a file.
RUN_ID = re.compile(r"[0-9a-f]{64}")


class CorruptRunFile(ScenarioError):
    """A run file failed verification (its message names the file and the check)."""


def warn(message: str) -> None:
    """One warning line on stderr (``l4slab: warning: ...``)."""
    print(f"l4slab: warning: {' '.join(str(message).split())}", file=sys.stderr)


def runs_dir(study_dir: Path) -> Path:
    return Path(study_dir) / "runs"


def check_run_id(rid: Any, where: str = "run id") -> str:
    """``rid`` if it is a run id (64 lowercase hex digits), else a one-line error: an id
    read from ``plan.json`` or the command line becomes a file name, and must never
    leave ``runs/`` (``../../x``)."""
    if not isinstance(rid, str) or not RUN_ID.fullmatch(rid):
        shown = repr(rid) if len(repr(rid)) <= 80 else repr(rid)[:77] + "..."
        raise ScenarioError(f"{where}: {shown} is not a run id (64 hex digits, as in plan.json)")
    return rid


def run_path(study_dir: Path, rid: str) -> Path:
    return runs_dir(study_dir) / f"{check_run_id(rid)}.parquet"


def failed_path(study_dir: Path, rid: str) -> Path:
    return Path(study_dir) / "failed" / f"{check_run_id(rid)}.json"


# --- one run → one Parquet file -----------------------------------------------------------------


def bottleneck_row(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's bottleneck and run-level numbers as one flat row."""
    bottleneck = summary["bottleneck"]
    row: dict[str, Any] = {
        "rate_mbps": bottleneck.get("rate_mbps"),
        "qdisc_config": bottleneck.get("qdisc_config"),
        "utilisation": bottleneck.get("utilisation"),
        "drops": bottleneck.get("drops"),
        "marks": bottleneck.get("marks"),
    }
    for name, value in (bottleneck.get("sojourn_ms") or {}).items():
        row["sojourn_count" if name == "count" else f"sojourn_{name}_ms"] = value
    stats = dict(bottleneck.get("qdisc") or {})
    extra = stats.pop("extra", None) or {}
    for name, value in {**stats, **extra}.items():
        if isinstance(value, (int, float, str)) or value is None:
            row[f"qdisc_{name}"] = value
    for name in ("jain_index", "packets_sent", "packets_delivered", "packets_dropped", "packets_in_flight",
                 "packets_data", "packets_acks", "events"):  # fmt: skip
        row[name] = summary.get(name)
    return row


def _arrow(frame: pd.DataFrame, table: str) -> pa.Table:
    # Column by column as `pa.Table.from_pandas` converts them (NaN and None → null), without
    # the pandas metadata it builds for a round trip (about half its time; dropped here anyway).
    names = [f"{table}.{name}" for name in frame.columns]
    # The column arrays themselves where pandas offers them (`_iter_column_arrays`, pandas
    # 1.3 and later): the same arrays `pa.array` reads out of each column's Series, without
    # building a Series per column (nine tenths of the conversion of the one- and two-row
    # tables with 90 columns).
    columns = getattr(frame, "_iter_column_arrays", None)
    columns = columns() if columns is not None else (column for _, column in frame.items())
    arrays = [pa.array(column, from_pandas=True) for column in columns]
    arrays.append(pa.array([table] * len(frame), pa.string()))
    return pa.Table.from_arrays(arrays, names=[*names, "table"])


def _concat(tables: list[pa.Table]) -> pa.Table:
    try:
        return pa.concat_tables(tables, promote_options="default")
    except TypeError:  # pyarrow < 14
        return pa.concat_tables(tables, promote=True)


def _column_digest(digest: Any, column: pa.ChunkedArray) -> None:
    """Feed one column's decoded values into ``digest``: validity, then values by kind
    (numbers and booleans as their numpy bytes with nulls filled, strings as their
    lengths and characters, anything else as the repr of its Python values)."""
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        # Read from each chunk's buffers into one validity and one value array: the
        # validity bits unpacked and the values with nulls as 0, the bytes `is_valid` and
        # `fill_null(0)` give, without their per-call overhead (most columns are null in
        # most rows), and without combining the chunks first (a copy of every column: the
        # run file's table is its logical tables concatenated, five chunks a column, most
        # of them all null).
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        n = len(column)
        dtype = np.dtype(kind.to_pandas_dtype())
        values = np.zeros(n, dtype=dtype)
        valid = np.zeros(n, dtype=bool)
        start = 0
        for chunk in chunks:
            m, offset, nulls = len(chunk), chunk.offset, chunk.null_count
            if nulls < m:
                bits, data = chunk.buffers()[:2]
                raw = np.frombuffer(data, dtype=dtype, count=offset + m)[offset:]
                if nulls == 0:
                    valid[start : start + m] = True
                    values[start : start + m] = raw
                else:
                    unpacked = np.unpackbits(np.frombuffer(bits, np.uint8), count=offset + m, bitorder="little")
                    chunk_valid = unpacked[offset:].view(bool)
                    valid[start : start + m] = chunk_valid
                    np.copyto(values[start : start + m], raw, where=chunk_valid)
            start += m
        digest.update(np.packbits(valid).tobytes())
        digest.update(values.dtype.str.encode() + b"\0" + values.tobytes())
        return
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    digest.update(np.packbits(array.is_valid().to_numpy(zero_copy_only=False)).tobytes())
    if pa.types.is_boolean(kind):
        filled = pc.fill_null(array, False)
        values = filled.to_numpy(zero_copy_only=False)
        digest.update(values.dtype.str.encode() + b"\0" + values.tobytes())
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        # The lengths, then the characters: read from the buffers (a Python loop over a
        # series' rows would cost a second per file).
        filled = pc.fill_null(array, "")
        digest.update(pc.binary_length(filled).to_numpy(zero_copy_only=False).astype("<i8").tobytes())
        _, offsets, data = filled.buffers()
        if len(filled) and data is not None:
            width = np.int32 if pa.types.is_string(kind) else np.int64
            bounds = np.frombuffer(offsets, dtype=width)[filled.offset : filled.offset + len(filled) + 1]
            digest.update(memoryview(data)[int(bounds[0]) : int(bounds[-1])])
    else:
        digest.update(repr(array.to_pylist()).encode("utf-8", "backslashreplace"))


def content_digest(table: pa.Table, identity: bytes) -> str:
    """sha256 of a run file's decoded contents: its identity JSON (the ``META_KEY``
    value as stored) and every column's name and values, in order. Written into the
    file (``CHECKSUM_KEY``) and recomputed on every read, so a corruption that decodes
    to other values (a flipped byte in a page header, a dictionary or the footer) is
    caught even where no page checksum covers it."""
    digest = hashlib.sha256(b"l4slab.run-content/1\n")
    digest.update(len(identity).to_bytes(8, "little") + identity)
    digest.update(table.num_rows.to_bytes(8, "little"))
    for name in table.column_names:
        encoded = name.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
        _column_digest(digest, table.column(name))
    return digest.hexdigest()


def run_file_bytes(result: Any, meta: Mapping[str, Any]) -> bytes:
    """Serialise a :class:`~l4slab.results.RunResult` and its identity into one Parquet
    file, with its content digest in the metadata and page checksums on."""
    return run_file(result, meta)[0]


def run_file(result: Any, meta: Mapping[str, Any]) -> tuple[bytes, pa.Table]:
    """:func:`run_file_bytes` and the table the bytes encode (identity and digest in its
    schema metadata)."""
    data, table, _ = run_file_with_part(result, meta)
    return data, table


def run_file_with_part(result: Any, meta: Mapping[str, Any]) -> tuple[bytes, pa.Table, dict[str, pa.Table | None]]:
    """:func:`run_file` and the run's catalog part (:func:`catalog_part` of the table), taken
    from the logical tables before they are concatenated: the rows :func:`split_arrow`
    would select from the whole table are those tables' own rows, in the same columns and
    types, so a worker renames three small tables instead of filtering the run file's 100
    columns for them. The part stays in Arrow (no pandas conversion per run): the catalog
    converts all runs' parts of one kind at once (:func:`_assemble`)."""
    flow_series = _flow_series_arrow(result.raw)
    frames = {
        "flows": flows_frame(result.summary["flows"]),
        "bottleneck": pd.DataFrame([bottleneck_row(result.summary)]),
        "classes": result.classes,
        "flow_series": result.flow_series if flow_series is None else flow_series,
        "bottleneck_series": result.bottleneck_series,
    }
    # Web sources' per-request records (DualQ paper App. C: size, FCT, completion efficiency),
    # kept so a study's FCT analysis reads the store; absent for runs without web traffic.
    requests = getattr(result, "requests", None)
    if requests is not None and len(requests):
        frames["requests"] = requests
    pieces = {
        name: frame if isinstance(frame, pa.Table) else _arrow(frame, name)
        for name, frame in frames.items()
        if len(frame.column_names if isinstance(frame, pa.Table) else frame.columns)
    }
    table = _concat(list(pieces.values()))
    table = table.select(["table", *[c for c in table.column_names if c != "table"]])
    identity = json.dumps({**meta, "complete": True}).encode()
    table = table.replace_schema_metadata({META_KEY: identity, CHECKSUM_KEY: content_digest(table, identity).encode()})
    buffer = io.BytesIO()
    # Dictionary pages only for the text columns (the number series' values hardly repeat:
    # trying a dictionary first and falling back took about a third of the write), and no
    # min/max statistics (nothing reads a run file by a predicate; each is read whole or by
    # columns).
    text = [name for name in table.column_names if pa.types.is_string(table.schema.field(name).type)]
    pq.write_table(table, buffer, compression="zstd", write_page_checksum=True, use_dictionary=text,
                   write_statistics=False)  # fmt: skip
    part = {name: _piece_table(pieces.get(name), name) for name in SUMMARY_TABLES}
    return buffer.getvalue(), table, part


def _flow_series_arrow(raw: Mapping[str, Any]) -> pa.Table | None:
    """The ``flow_series`` table as ``_arrow(flow_series_frame(raw), "flow_series")`` gives
    it, built from the engine's arrays without the per-flow frames and their
    concatenation (most of a run file's series cost): ``time_s`` and ``flow`` per flow,
    then every series in the order the flows first name it, a series a flow lacks as NaN
    (an integer series then float, as the concatenation makes it), the CC-state series
    (:data:`~l4slab.results.CC_STATE_SERIES`) all six when any is there, ``cc_mode`` as
    text with ``""`` for a missing value; NaN is null, as in :func:`_arrow`. None (the
    frame's own path) for anything else: no flows, a series that is not a float, integer
    or, for ``cc_mode``, text array."""
    flows, per_flow, time_s = raw.get("flows") or [], raw.get("flow_series") or [], raw.get("time_s")
    if not flows or len(flows) != len(per_flow) or not isinstance(time_s, np.ndarray) or time_s.dtype != np.float64:
        return None
    n = len(time_s)
    names: dict[str, None] = {}
    for series in per_flow:
        for name, values in series.items():
            if not isinstance(values, np.ndarray) or len(values) != n:
                return None
            if values.dtype.kind not in "if" if name != "cc_mode" else values.dtype != object:
                return None
            if name in ("time_s", "flow"):
                return None
            names[name] = None
    if any(name in names for name in CC_STATE_SERIES):
        names.update({name: None for name in CC_STATE_SERIES})
    columns = {
        "time_s": np.tile(time_s, len(flows)),
        "flow": np.repeat(np.asarray([int(flow["id"]) for flow in flows], dtype=np.int64), n),
    }
    for name in names:
        parts = [series.get(name) for series in per_flow]
        if name == "cc_mode":
            text = [v if isinstance(v, str) else "" for p in parts for v in (p if p is not None else [None] * n)]
            columns[name] = np.asarray(text, dtype=object)
        elif all(p is not None for p in parts):
            columns[name] = np.concatenate(parts)
        else:
            columns[name] = np.concatenate([np.full(n, np.nan) if p is None else p.astype(np.float64) for p in parts])
    arrays = [pa.array(values, from_pandas=True) for values in columns.values()]
    arrays.append(pa.array(["flow_series"] * (n * len(flows)), pa.string()))
    return pa.Table.from_arrays(arrays, names=[*(f"flow_series.{name}" for name in columns), "table"])


def _piece_table(piece: pa.Table | None, name: str) -> pa.Table | None:
    """One logical table (its :func:`_arrow` form) as :func:`split_arrow` gives it."""
    if piece is None:
        return None
    prefix = len(name) + 1
    columns = [column for column in piece.column_names if column != "table"]
    return piece.select(columns).rename_columns([column[prefix:] for column in columns]).replace_schema_metadata(None)


def load_records(study_dir: Path) -> dict[str, str]:
    """Run id → sha256 of its file's bytes, from ``records.jsonl`` (the last line per id
    wins; a torn or garbled line, e.g. from a kill mid-append, is ignored)."""
    try:
        text = read_input(Path(study_dir) / RECORDS, "checksum records file").decode("utf-8", "replace")
    except OSError:
        return {}
    except ScenarioError as err:  # a FIFO, a device, too large: no records (each file verifies itself)
        warn(f"{err}; ignored")
        return {}
    records: dict[str, str] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            rid, sha = entry["id"], entry["sha256"]
        except (ValueError, TypeError, KeyError, RecursionError):
            continue
        if isinstance(rid, str) and isinstance(sha, str):
            records[rid] = sha
    return records


def append_record(study_dir: Path, rid: str, data: bytes) -> None:
    """Append the run's file checksum to ``records.jsonl``: one ``write`` of one line with
    ``O_APPEND`` (concurrent ``run-one`` processes do not interleave lines), fsynced."""
    line = json.dumps({"id": rid, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                       "written_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})  # fmt: skip
    path = Path(study_dir) / RECORDS
    refusal = ScenarioError(f"{path}: not a regular file; remove it (each run file also verifies without it)")
    try:
        # O_NONBLOCK: a FIFO in its place fails at once (no reader) instead of waiting for one.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.EISDIR):
            raise refusal from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise refusal
        # A torn line left by a kill is ended first, so this record stays parseable.
        os.write(fd, b"\n" + line.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def write_run_file(study_dir: Path, rid: str, data: bytes) -> Path:
    """Atomically place a run's Parquet file, record its checksum, clear a previous failure record."""
    path = write_bytes(run_path(study_dir, rid), data)
    append_record(study_dir, rid, data)
    failed_path(study_dir, rid).unlink(missing_ok=True)
    return path


def write_failure(study_dir: Path, rid: str, error: str) -> None:
    write_json(failed_path(study_dir, rid), {"id": rid, "error": error})


def _study_of(path: Path) -> Path:
    return Path(path).parent.parent


def verify_run_file(
    path: Path, records: Mapping[str, str] | None = None, *, decode: bool = True,
    tables: tuple[str, ...] | None = None,
) -> tuple[dict[str, Any], pa.Table | None]:  # fmt: skip
    """Read and verify a run file: its bytes against ``records.jsonl`` (when the run is
    recorded there), every page's CRC, the identity and the content digest. Returns
    (identity, table); raises :class:`CorruptRunFile` naming the file and the failed
    check, or ``FileNotFoundError`` when there is no file.

    Bytes that match their record are exactly the bytes written, whose digest was taken
    from the very table they encode: the digest is not recomputed then, with
    ``decode=False`` nothing is decoded (``status``: ({}, None), a hash per file), and
    with ``tables`` only those logical tables' columns are decoded (the catalog's
    summary tables: not the series, most of a file's pages). A file without a record is
    decoded whole, to check its digest."""
    path = Path(path)
    data = read_input(path, "run file", MAX_RUN_FILE_BYTES, error=CorruptRunFile)
    if records is None:
        records = load_records(_study_of(path))

    def corrupt(why: str) -> CorruptRunFile:
        return CorruptRunFile(f"{path}: corrupt run file: {why}")

    expected = records.get(path.stem)
    recorded = expected is not None and hashlib.sha256(data).hexdigest() == expected
    if expected is not None and not recorded:
        raise corrupt(f"its sha256 differs from the one recorded in {RECORDS} when it was written")
    if recorded and not decode:
        return {}, None
    try:
        table = _read_parquet(data, tables if recorded else None)
        metadata = table.schema.metadata or {}
        identity = metadata[META_KEY]
        stored = metadata[CHECKSUM_KEY].decode("ascii")
        meta = json.loads(identity)
    except KeyError as err:
        raise corrupt(f"no {err.args[0].decode()} metadata (not written by this version, or damaged)") from None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError, pa.ArrowException) as err:
        raise corrupt(" ".join(str(err).split())[:200] or type(err).__name__) from None
    if not isinstance(meta, dict) or not meta.get("complete") or meta.get("id") != path.stem:
        raise corrupt("its identity does not name this run")
    if recorded:
        return meta, table
    try:
        actual = content_digest(table.replace_schema_metadata(None), identity)
    except (pa.ArrowException, ValueError, TypeError) as err:
        raise corrupt(f"cannot decode its values ({type(err).__name__})") from None
    if actual != stored:
        raise corrupt("its values differ from the content checksum written with them")
    return meta, table


def _read_parquet(data: bytes, tables: tuple[str, ...] | None = None) -> pa.Table:
    """The table a run file's bytes encode, every page's CRC checked (only the columns of
    the logical ``tables`` and ``table``, when given). One thread: ``pq.read_table``'s
    dataset layer and thread pool cost more than decoding a run file's pages (8 against
    3 ms of CPU per file)."""
    file = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
    columns = None
    if tables is not None:
        columns = [c for c in file.schema_arrow.names if c == "table" or c.split(".", 1)[0] in tables]
    return file.read(columns=columns, use_threads=False)


def read_run_meta(path: Path) -> dict[str, Any] | None:
    """The run's identity if the file verifies (:func:`verify_run_file`), else None."""
    try:
        return verify_run_file(path)[0]
    except (OSError, CorruptRunFile):
        return None


def split_table(table: pa.Table, name: str) -> pd.DataFrame:
    """One logical table of a (verified) run file, with its own column names."""
    rows = split_arrow(table, name)
    return pd.DataFrame() if rows is None else rows.to_pandas()


def split_arrow(table: pa.Table, name: str) -> pa.Table | None:
    """:func:`split_table` before its conversion to pandas (None: the file has no such table)."""
    prefix = f"{name}."
    columns = [column for column in table.column_names if column.startswith(prefix)]
    if not columns:
        return None
    # The table's own columns first, then its rows: filtering a whole run file's ~100
    # columns to select a few of them afterwards cost most of a catalog part.
    rows = table.select(["table", *columns])
    rows = rows.filter(pc.equal(rows.column("table"), name)).select(columns)
    return rows.rename_columns([column[len(prefix) :] for column in columns]).replace_schema_metadata(None)


def read_run_table(path: Path, table: str) -> pd.DataFrame:
    """One logical table of a run file, verified first; a corrupt file raises
    :class:`CorruptRunFile` (one line naming it), a missing one ``FileNotFoundError``."""
    return split_table(verify_run_file(path)[1], table)


def quarantine(study_dir: Path, path: Path, reason: str) -> Path:
    """Move a corrupt run file to ``runs/corrupt/`` (kept for inspection, out of every
    glob of ``runs/*.parquet``) and say so on one line."""
    target_dir = runs_dir(study_dir) / "corrupt"
    target_dir.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    target = target_dir / f"{path.stem}.{stamp}.parquet"
    os.replace(path, target)
    warn(f"{reason}; moved to {target} and will be run again")
    return target


# --- plan and status -----------------------------------------------------------------------------


def _plan_error(study_dir: Path, why: str) -> ScenarioError:
    return ScenarioError(
        f"{Path(study_dir) / 'plan.json'}: {why}; re-plan it with `l4slab study run FILE --out {study_dir}`"
    )


def _check_plan(study_dir: Path, plan: Any) -> dict[str, Any]:
    """The shape every reader of ``plan.json`` relies on, checked once (a truncated or
    hand-edited plan is one line, not a KeyError deep in a command)."""
    if not isinstance(plan, dict):
        raise _plan_error(study_dir, "not a JSON object")
    if not isinstance(plan.get("checksum"), str):
        raise _plan_error(study_dir, "it has no checksum (damaged, or planned by an older l4slab)")
    try:
        actual = plan_checksum(plan)
    except (TypeError, ValueError, RecursionError):
        actual = None
    if actual != plan["checksum"]:
        raise _plan_error(study_dir, "its content differs from the checksum written with it (changed after planning)")
    for key, kind in (("factors", list), ("points", list), ("runs", list), ("study", str), ("model", str),
                      ("backend", str), ("guest", str)):  # fmt: skip
        if not isinstance(plan.get(key), kind):
            raise _plan_error(study_dir, f"{key!r} is missing or not a {kind.__name__}")
    if not plan["runs"] or not plan["points"]:
        raise _plan_error(study_dir, "it plans no runs")
    for i, factor in enumerate(plan["factors"]):
        if not isinstance(factor, dict) or not isinstance(factor.get("column"), str) or "path" not in factor:
            raise _plan_error(study_dir, f"factors[{i}] is not a factor")
    columns = [f["column"] for f in plan["factors"]]
    for i, point in enumerate(plan["points"]):
        if not (isinstance(point, dict) and isinstance(point.get("factors"), dict)
                and isinstance(point.get("config"), dict) and isinstance(point.get("scenario"), dict)
                and all(c in point["factors"] for c in columns)):  # fmt: skip
            raise _plan_error(study_dir, f"points[{i}] is not a point")
    for i, run in enumerate(plan["runs"]):
        if not isinstance(run, dict):
            raise _plan_error(study_dir, f"runs[{i}] is not a run")
        check_run_id(run.get("id"), f"{Path(study_dir) / 'plan.json'}: runs[{i}].id")
        point, trial, seed = run.get("point"), run.get("trial"), run.get("seed")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (point, trial, seed)):
            raise _plan_error(study_dir, f"runs[{i}] has no integer point, trial and seed")
        if not 0 <= point < len(plan["points"]):
            raise _plan_error(study_dir, f"runs[{i}].point {point} is not a point of the plan")
    if plan.get("metrics") is not None and not isinstance(plan["metrics"], list):
        raise _plan_error(study_dir, "'metrics' is not a list")
    return plan


def plan_checksum(plan: Mapping[str, Any]) -> str:
    """The content hash of a plan: sha256 of the canonical JSON of everything but its
    ``checksum`` (so whitespace does not count, every value and key does)."""
    from .spec import canonical_json

    body = {key: value for key, value in plan.items() if key != "checksum"}
    return hashlib.sha256(f"l4slab.study.plan\n{canonical_json(body)}".encode()).hexdigest()


def load_plan(study_dir: Path) -> dict[str, Any] | None:
    """The study's ``plan.json`` (None when there is none); a truncated, ill-typed or
    unreadable plan is a one-line :class:`ScenarioError`."""
    if "\0" in str(study_dir) or str(study_dir) == "":
        raise ScenarioError(f"{show(str(study_dir))}: not a study directory name")
    path = Path(study_dir) / "plan.json"
    try:
        text = read_input(path, "plan file")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise _plan_error(study_dir, "is a directory") from None
    except NotADirectoryError:
        raise ScenarioError(f"{study_dir}: not a study directory (a file)") from None
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        plan = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise _plan_error(study_dir, f"not valid JSON ({type(err).__name__}, truncated?)") from None
    return _check_plan(study_dir, plan)


def run_status(
    study_dir: Path,
    run_ids: Iterable[str],
    on_corrupt: Callable[[Path, str], None] | None = None,
) -> dict[str, str]:
    """``done`` (a run file that verifies), ``failed`` (a failure record) or ``pending``
    per id. A run file that fails verification counts as not done and is passed to
    ``on_corrupt(path, reason)`` (default: one warning line naming it)."""
    study_dir = Path(study_dir)
    records = load_records(study_dir)
    status = {}
    for rid in run_ids:
        path = run_path(study_dir, rid)
        try:
            verify_run_file(path, records, decode=False)
            status[rid] = "done"
            continue
        except FileNotFoundError:
            pass
        except (OSError, CorruptRunFile) as err:
            (on_corrupt or (lambda _p, why: warn(f"{why}; it will be run again")))(path, str(err))
        status[rid] = "failed" if failed_path(study_dir, rid).exists() else "pending"
    return status


# --- catalog ---------------------------------------------------------------------------------------


def identity_mismatch(meta: Mapping[str, Any]) -> str | None:
    """Why a run file's identity does not hash to its id (None when it does): the id is
    recomputed from the config digest, model and backend it records."""
    from .spec import id_from_digest

    parts = [meta.get(key) for key in ("config_sha256", "model", "backend", "guest")]
    if not all(isinstance(part, str) for part in parts):
        return "its identity records no config digest, model and backend (written before run ids hashed them)"
    if id_from_digest(*parts) != meta.get("id"):
        return "its identity (config digest, model, backend) does not hash to its run id"
    return None


def _identity(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run_id": meta["id"],
        "point": meta["point"],
        **meta["factors"],
        "trial": meta["trial"],
        "seed": meta["seed"],
    }


def _factor_frame(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Factor columns: numeric when every value is a number, else text."""
    for name in columns:
        if name not in frame:
            continue
        values = frame[name].tolist()
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values if v is not None):
            frame[name] = [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]
    return frame


#: The catalog's layout: a catalog of another (or no) ``catalog_format`` table is rebuilt by
#: its first reader, so tables gain the columns this version writes (the typed twins).
CATALOG_FORMAT = 2

#: Typed twins of factor columns in the catalog and its DataFrames: ``<column>_bdp`` (a
#: ``buffer`` factor as a number of BDPs; null for a buffer in bytes) and ``<column>_bps`` (a
#: ``rate`` factor in bit/s), so that figures and SQL sort and scale them as numbers.
TYPED_SUFFIXES = ("_bdp", "_bps")


def _typed_value(kind: str, value: Any) -> float | None:
    from .. import units

    try:
        if kind == "_bdp":
            parsed = units.buffer(value)
            return float(parsed.factor) if isinstance(parsed, units.BdpMultiple) else None
        return float(units.rate_bps(value))
    except (units.UnitError, TypeError, ValueError):
        return None


def _typed_factors(frame: pd.DataFrame, factors: list[dict[str, Any]]) -> None:
    """Add the typed twin of each buffer and rate factor column of ``frame`` (in place)."""
    for factor in factors:
        column, last = factor["column"], str(factor["path"]).split(".")[-1]
        kind = {"buffer": "_bdp", "rate": "_bps"}.get(last)
        if kind is None or column not in frame or f"{column}{kind}" in frame:
            continue
        values = {v: _typed_value(kind, v) for v in frame[column].dropna().unique()}
        if not any(v is not None for v in values.values()):
            continue
        typed = frame[column].map(lambda v, values=values: values.get(v)).astype("float64")
        frame.insert(frame.columns.get_loc(column) + 1, f"{column}{kind}", typed)


def _failure(path: Path) -> str:
    """The error a ``failed/<id>.json`` records; a damaged one says so, naming the file."""
    try:
        entry = json.loads(read_input(path, "failure record"))
        error = entry.get("error") if isinstance(entry, dict) else None
    except (OSError, ScenarioError, ValueError, RecursionError) as err:
        return f"(the failure record {path} is unreadable: {' '.join(str(err).split())[:120]})"
    return error if isinstance(error, str) else f"(the failure record {path} holds no error message)"


def run_entry(
    meta: dict[str, Any], table: pa.Table | Mapping[str, pa.Table | None], planned: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Part]] | str:
    """One verified run file's part of the catalog: its ``runs`` row and its summary
    tables (from its ``table``, or already split by :func:`catalog_part`), each with the
    run's identity to put in front; or why it is left out."""
    if not isinstance(meta.get("factors"), dict) or not all(k in meta for k in ("point", "trial", "seed")):
        return "its identity lacks point, factors, trial or seed"
    why = identity_mismatch(meta)
    if why is not None:
        return why
    if meta["id"] in planned:  # the current plan's point numbering wins
        meta = {**meta, "point": planned[meta["id"]]["point"]}
    identity = _identity(meta)
    run_row = {**identity, "status": "done", "wall_s": meta.get("wall_s"), "error": None,
               "in_plan": meta["id"] in planned}  # fmt: skip
    parts = catalog_part(table) if isinstance(table, pa.Table) else table
    return run_row, {name: Part(identity, parts[name]) for name in SUMMARY_TABLES}


def catalog_part(table: pa.Table) -> dict[str, pa.Table | None]:
    """A run file's summary tables (:data:`SUMMARY_TABLES`) as the catalog takes them
    (:func:`split_arrow`), before the run's identity columns are put in front."""
    return {name: split_arrow(table, name) for name in SUMMARY_TABLES}


class Part:
    """One run's rows of one catalog table: the run's identity (its columns in front, one
    value each) and the rows (:func:`split_arrow`; None: the run has no such table)."""

    __slots__ = ("identity", "rows")

    def __init__(self, identity: Mapping[str, Any], rows: pa.Table | None) -> None:
        self.identity, self.rows = identity, rows

    def frame(self) -> pd.DataFrame:
        """This part alone as a DataFrame: one column per identity key in front, each
        holding the key's value in every row (its type inferred from its values, as
        ``DataFrame.insert`` of a list infers it), then the rows."""
        rows = pd.DataFrame() if self.rows is None else self.rows.to_pandas()
        n = len(rows)
        front = pd.DataFrame({key: [value] * n for key, value in self.identity.items()}, index=rows.index)
        if not len(rows.columns):
            return front
        return pd.concat([front, rows], axis=1)

    def kind(self) -> tuple[Any, ...] | None:
        """Parts of one kind make the same columns of the same types: the rows' schema and
        each identity column's type (:func:`_value_dtype`). None for a part without rows,
        whose identity columns' types pandas takes from no value (it stays alone)."""
        if self.rows is None or self.rows.num_rows == 0:
            return None
        return (self.rows.schema, *((key, _value_dtype(value)) for key, value in self.identity.items()))


_DTYPES: dict[type, Any] = {}


def _value_dtype(value: Any) -> Any:
    """The dtype pandas gives a column of rows that all hold ``value`` (``[value] * n``)."""
    kind = type(value)
    if kind is int and not -(2**63) <= value < 2**63:
        return pd.Series([value]).dtype  # uint64 or object: by the value, not its type
    if kind not in _DTYPES:
        _DTYPES[kind] = pd.Series([value]).dtype
    return _DTYPES[kind]


def _assemble(parts: list[Part]) -> pd.DataFrame:
    """``pd.concat([part.frame() for part in parts], ignore_index=True)``, the same frame,
    in a fraction of the time: the parts of one kind (:meth:`Part.kind`: the same columns of
    the same types) are concatenated in Arrow and converted to pandas at once, their
    identity columns built from one list each, the kinds concatenated in the order they
    first appear (so the union of the columns comes in the order the plain concatenation
    gives) and the rows put back in the parts' order. A study's thousands of one- and
    two-row parts spent most of their catalog time in pandas' per-part conversions and
    concatenation."""
    kinds: dict[Any, list[int]] = {}
    for i, part in enumerate(parts):
        kind = part.kind()
        kinds.setdefault(("alone", i) if kind is None else kind, []).append(i)
    starts = np.cumsum([0] + [0 if part.rows is None else part.rows.num_rows for part in parts])
    pieces, positions = [], []
    for kind, members in kinds.items():
        if kind[0] == "alone":
            pieces.append(parts[members[0]].frame())
        else:
            rows = pa.concat_tables([parts[i].rows for i in members]).to_pandas()
            counts = [parts[i].rows.num_rows for i in members]
            front = pd.DataFrame(
                {key: pd.Series([parts[i].identity[key] for i, n in zip(members, counts) for _ in range(n)],
                                dtype=dtype, index=rows.index)
                 for key, dtype in kind[1:]}  # fmt: skip
            )
            pieces.append(pd.concat([front, rows], axis=1))
        positions.extend(np.arange(starts[i], starts[i + 1]) for i in members)
    if len(pieces) == 1:
        return pieces[0]
    joined = pd.concat(pieces, ignore_index=True)
    order = np.argsort(np.concatenate(positions), kind="stable")
    return joined.take(order).reset_index(drop=True)


class Prepared:
    """The catalog's per-run parts, built as runs finish (``l4slab study run`` adds each
    run's file bytes as it writes them) so that the catalog at the end only assembles them.

    An entry is used only for a file whose bytes on disk still hash to the sha256 it
    was prepared from and recorded with in ``records.jsonl``; any other file is read
    and verified as usual (:func:`verify_run_file`)."""

    def __init__(self, plan: Mapping[str, Any]) -> None:
        self._planned = {run["id"]: run for run in plan.get("runs", [])}
        self._entries: dict[str, tuple[str, tuple[dict[str, Any], dict[str, Part]]]] = {}

    def add(self, rid: str, data: bytes, part: Mapping[str, pa.Table | None] | None = None) -> None:
        """Prepare the catalog part of run ``rid`` whose file bytes were just written: from
        ``part``, the summary tables the worker took from the very table these bytes
        encode (:func:`catalog_part`; only the identity is read from the bytes, in their
        footer), else by decoding and verifying the bytes (the content digest is the one
        the worker took from that table)."""
        try:
            # A part in another form (a worker of another version) is not used: the bytes are.
            if (
                part is not None
                and set(part) == set(SUMMARY_TABLES)
                and all(rows is None or isinstance(rows, pa.Table) for rows in part.values())
            ):
                meta = json.loads(pq.read_schema(pa.BufferReader(data)).metadata[META_KEY])
                table: Any = part
            else:
                # Only the summary tables' columns: the series are not in the catalog.
                table = _read_parquet(data, SUMMARY_TABLES)
                meta = json.loads(table.schema.metadata[META_KEY])
        except (KeyError, TypeError, OSError, ValueError, UnicodeDecodeError, RecursionError, pa.ArrowException):
            return  # left to the catalog's own reading, which names the problem
        if not isinstance(meta, dict) or not meta.get("complete") or meta.get("id") != rid:
            return
        try:
            entry = run_entry(meta, table, self._planned)
        except Exception:  # noqa: BLE001 - the catalog reads the file itself and names what is wrong
            return
        if not isinstance(entry, str):
            self._entries[rid] = (hashlib.sha256(data).hexdigest(), entry)

    def take(self, path: Path, records: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Part]] | None:
        """The prepared entry of the run file at ``path`` if its bytes are those it was
        prepared from (and recorded with), else None."""
        held = self._entries.pop(path.stem, None)
        if held is None or records.get(path.stem) != held[0]:
            return None
        try:
            data = read_input(path, "run file", MAX_RUN_FILE_BYTES, error=CorruptRunFile)
        except (OSError, CorruptRunFile):
            return None
        return held[1] if hashlib.sha256(data).hexdigest() == held[0] else None


def collect(study_dir: Path, prepared: Prepared | None = None) -> dict[str, pd.DataFrame]:
    """The catalog's tables as DataFrames, read from the plan and the run files (the
    parts in ``prepared`` taken from there instead of decoded again)."""
    from .summary import summarise

    study_dir = Path(study_dir)
    plan = load_plan(study_dir) or {"factors": [], "runs": [], "points": [], "metrics": None}
    factor_columns = [f["column"] for f in plan["factors"]]
    planned = {run["id"]: run for run in plan["runs"]}
    rows: dict[str, list[Part]] = {name: [] for name in SUMMARY_TABLES}
    runs: list[dict[str, Any]] = []
    found: set[str] = set()
    records = load_records(study_dir)
    for path in sorted(runs_dir(study_dir).glob("*.parquet")):
        entry = prepared.take(path, records) if prepared is not None else None
        if entry is None:
            try:
                meta, table = verify_run_file(path, records, tables=SUMMARY_TABLES)
            except FileNotFoundError:
                continue
            except (OSError, CorruptRunFile) as err:
                warn(f"{err}; left out (`l4slab study run` runs it again)")
                continue
            entry = run_entry(meta, table, planned)
            if isinstance(entry, str):
                warn(f"{path}: {entry}; left out")
                continue
        run_row, frames = entry
        found.add(run_row["run_id"])
        runs.append(run_row)
        for name in SUMMARY_TABLES:
            rows[name].append(frames[name])
    for rid, run in planned.items():
        if rid in found:
            continue
        point = plan["points"][run["point"]]
        failed = failed_path(study_dir, rid)
        error = _failure(failed) if failed.exists() else None
        runs.append({"run_id": rid, "point": run["point"], **point["factors"], "trial": run["trial"],
                     "seed": run["seed"], "status": "failed" if failed.exists() else "pending",
                     "wall_s": None, "error": error, "in_plan": True})  # fmt: skip
    tables = {"runs": pd.DataFrame(runs, columns=["run_id", "point", *factor_columns, "trial", "seed", "status",
                                                  "wall_s", "error", "in_plan"])}  # fmt: skip
    tables["runs"] = tables["runs"].sort_values(
        ["in_plan", "point", "trial"], ascending=[False, True, True], ignore_index=True
    )
    for name, frames in rows.items():
        tables[name] = _assemble(frames) if frames else pd.DataFrame(columns=["run_id", "point"])
    for frame in tables.values():
        _factor_frame(frame, factor_columns)
    in_plan = set(planned) if planned else found
    tables["summaries"] = summarise(
        tables["flows"][tables["flows"]["run_id"].isin(in_plan)],
        tables["bottleneck"][tables["bottleneck"]["run_id"].isin(in_plan)],
        factor_columns,
        plan.get("metrics"),
    )
    for frame in tables.values():  # after the summaries: the twins are factors, not metrics
        _typed_factors(frame, plan["factors"])
    tables["catalog_format"] = pd.DataFrame({"version": [CATALOG_FORMAT]})
    return tables


CATALOG = "catalog.duckdb"


class CatalogError(OSError):
    """The catalog could not be written or verified: one line, exit 1 (the environment,
    e.g. a full disk, not a user mistake); the run files are intact."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


def _remove_leftovers(study_dir: Path) -> None:
    """Temp files of catalog builds whose process died (a kill, a full disk):
    ``.catalog.duckdb.<pid>.*.tmp`` and DuckDB's ``.tmp.wal`` beside them."""
    remove_leftovers(Path(study_dir) / CATALOG)


def _verify_catalog(path: Path, tables: Mapping[str, pd.DataFrame]) -> None:
    """Open the built file read-only and check each table's row and column count."""
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        present = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for name, frame in tables.items():
            if name not in present:
                raise CatalogError(f"catalog: table {name!r} is missing after the build")
            rows = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
            columns = len(con.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            if rows != len(frame) or columns != len(frame.columns):
                raise CatalogError(
                    f"catalog: table {name!r} has {rows} rows × {columns} columns after the build, "
                    f"expected {len(frame)} × {len(frame.columns)}"
                )


def rebuild_catalog(study_dir: Path, prepared: Prepared | None = None) -> Path:
    """Rebuild ``catalog.duckdb`` from the run files and the plan.

    The new catalog is built in a temp file beside it, checkpointed explicitly (DuckDB's
    close does not raise when its final checkpoint fails, e.g. on a full disk), reopened
    and its tables' row counts checked against the run files, and only then renamed over
    the old one. Leftovers of earlier builds are removed. A failure is one
    :class:`CatalogError` line; the old catalog, if any, is left in place."""
    import duckdb

    study_dir = Path(study_dir)
    _remove_leftovers(study_dir)
    tables = collect(study_dir, prepared)

    def write(tmp: Path) -> None:
        tmp.unlink()
        try:
            with duckdb.connect(str(tmp)) as con:
                for name, frame in tables.items():
                    con.register("frame", frame)
                    con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')
                    con.unregister("frame")
                con.execute("CHECKPOINT")
            if Path(f"{tmp}.wal").exists() and Path(f"{tmp}.wal").stat().st_size > 0:
                raise CatalogError("catalog: DuckDB left unwritten data in its log after the checkpoint")
            _verify_catalog(tmp, tables)
        finally:
            Path(f"{tmp}.wal").unlink(missing_ok=True)

    try:
        return atomic_write(study_dir / CATALOG, write)
    except CatalogError as err:
        raise CatalogError(f"{study_dir / CATALOG}: not replaced: {err}") from None
    except (OSError, duckdb.Error) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else " ".join(str(err).split())[:200]
        raise CatalogError(
            f"{study_dir / CATALOG}: cannot be written ({why}); the run files are intact, "
            "run the command again when there is space"
        ) from None


def catalog_stale(study_dir: Path) -> bool:
    """True when the catalog is missing or older than the plan, the failure records, the
    checksum records or any run file (a file changed in place counts too)."""
    study_dir = Path(study_dir)
    catalog = study_dir / CATALOG
    if not catalog.exists():
        return True
    built = catalog.stat().st_mtime_ns
    paths = [runs_dir(study_dir), study_dir / "failed", study_dir / "plan.json", study_dir / RECORDS]
    if runs_dir(study_dir).is_dir():
        paths += runs_dir(study_dir).glob("*.parquet")
    for path in paths:
        try:
            if path.stat().st_mtime_ns > built:
                return True
        except OSError:
            continue
    return False
