"""The results store of a study directory.

Layout (``STUDY_DIR``)::

    study.toml          the study file as given (copy)
    plan.json           the expanded study: factors, points (scenario + engine config), runs
    runs/<id>.parquet   one file per finished run (source of truth), written atomically
    failed/<id>.json    the error of a run that failed (removed when it succeeds)
    catalog.duckdb      tables runs, flows, bottleneck, classes, summaries (rebuildable)

A run file is one Parquet table holding several logical tables: a ``table`` column
names the table of each row (``flows``, ``bottleneck``, ``classes``, ``flow_series``,
``bottleneck_series``) and every other column is ``<table>.<column>`` (null in the
other tables' rows, which Parquet stores for almost nothing). The schema metadata key
``l4slab.study.run`` holds the run's identity as JSON (id, study, point, point key,
factor values, trial, seed, wall_s, engine and l4slab versions, ``"complete": true``);
a file that pyarrow cannot read, or without that key, or whose id differs from its
name, is not a finished run and is run again.

``id`` = sha256 of the canonical JSON of the resolved engine config (seed included)
and the engine version (:func:`l4slab.study.spec.run_id`).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..io import atomic_write, write_bytes, write_json
from ..results import flows_frame

__all__ = [
    "META_KEY",
    "TABLES",
    "run_file_bytes",
    "write_run_file",
    "read_run_meta",
    "read_run_table",
    "run_status",
    "rebuild_catalog",
    "load_plan",
]

META_KEY = b"l4slab.study.run"
TABLES = ("flows", "bottleneck", "classes", "flow_series", "bottleneck_series")
SUMMARY_TABLES = ("flows", "bottleneck", "classes")


def runs_dir(study_dir: Path) -> Path:
    return Path(study_dir) / "runs"


def run_path(study_dir: Path, rid: str) -> Path:
    return runs_dir(study_dir) / f"{rid}.parquet"


def failed_path(study_dir: Path, rid: str) -> Path:
    return Path(study_dir) / "failed" / f"{rid}.json"


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
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    arrow = arrow.rename_columns([f"{table}.{name}" for name in arrow.column_names])
    arrow = arrow.replace_schema_metadata(None)
    return arrow.append_column("table", pa.array([table] * arrow.num_rows, pa.string()))


def _concat(tables: list[pa.Table]) -> pa.Table:
    try:
        return pa.concat_tables(tables, promote_options="default")
    except TypeError:  # pyarrow < 14
        return pa.concat_tables(tables, promote=True)


def run_file_bytes(result: Any, meta: Mapping[str, Any]) -> bytes:
    """Serialise a :class:`~l4slab.results.RunResult` and its identity into one Parquet file."""
    frames = {
        "flows": flows_frame(result.summary["flows"]),
        "bottleneck": pd.DataFrame([bottleneck_row(result.summary)]),
        "classes": result.classes,
        "flow_series": result.flow_series,
        "bottleneck_series": result.bottleneck_series,
    }
    table = _concat([_arrow(frame, name) for name, frame in frames.items() if len(frame.columns)])
    table = table.select(["table", *[c for c in table.column_names if c != "table"]])
    table = table.replace_schema_metadata({META_KEY: json.dumps({**meta, "complete": True}).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd")
    return buffer.getvalue()


def write_run_file(study_dir: Path, rid: str, data: bytes) -> Path:
    """Atomically place a run's Parquet file; clear a previous failure record."""
    path = write_bytes(run_path(study_dir, rid), data)
    failed_path(study_dir, rid).unlink(missing_ok=True)
    return path


def write_failure(study_dir: Path, rid: str, error: str) -> None:
    write_json(failed_path(study_dir, rid), {"id": rid, "error": error})


def read_run_meta(path: Path) -> dict[str, Any] | None:
    """The run's identity, or None if the file is missing, unreadable or incomplete."""
    try:
        metadata = pq.read_metadata(path).metadata or {}
        meta = json.loads(metadata[META_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowException):
        return None
    if not meta.get("complete") or meta.get("id") != Path(path).stem:
        return None
    return meta


def read_run_table(path: Path, table: str) -> pd.DataFrame:
    """One logical table of a run file, with its own column names."""
    schema = pq.read_schema(path)
    prefix = f"{table}."
    columns = [name for name in schema.names if name.startswith(prefix)]
    if not columns:
        return pd.DataFrame()
    arrow = pq.read_table(path, columns=["table", *columns], filters=[("table", "=", table)])
    frame = arrow.drop_columns(["table"]).to_pandas()
    return frame.rename(columns=lambda name: name[len(prefix) :])


# --- plan and status -----------------------------------------------------------------------------


def load_plan(study_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(study_dir) / "plan.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def run_status(study_dir: Path, run_ids: Iterable[str]) -> dict[str, str]:
    """``done`` (a valid run file), ``failed`` (a failure record) or ``pending`` per id."""
    status = {}
    for rid in run_ids:
        if read_run_meta(run_path(study_dir, rid)) is not None:
            status[rid] = "done"
        elif failed_path(study_dir, rid).exists():
            status[rid] = "failed"
        else:
            status[rid] = "pending"
    return status


# --- catalog ---------------------------------------------------------------------------------------


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


def collect(study_dir: Path) -> dict[str, pd.DataFrame]:
    """The catalog's tables as DataFrames, read from the plan and the run files."""
    from .summary import summarise

    study_dir = Path(study_dir)
    plan = load_plan(study_dir) or {"factors": [], "runs": [], "points": [], "metrics": None}
    factor_columns = [f["column"] for f in plan["factors"]]
    planned = {run["id"]: run for run in plan["runs"]}
    rows: dict[str, list[pd.DataFrame]] = {name: [] for name in SUMMARY_TABLES}
    runs: list[dict[str, Any]] = []
    found: set[str] = set()
    for path in sorted(runs_dir(study_dir).glob("*.parquet")):
        meta = read_run_meta(path)
        if meta is None:
            continue
        found.add(meta["id"])
        if meta["id"] in planned:  # the current plan's point numbering wins
            meta = {**meta, "point": planned[meta["id"]]["point"]}
        identity = _identity(meta)
        runs.append({**identity, "status": "done", "wall_s": meta.get("wall_s"), "error": None,
                     "in_plan": meta["id"] in planned})  # fmt: skip
        for name in SUMMARY_TABLES:
            frame = read_run_table(path, name)
            for key, value in reversed(identity.items()):
                frame.insert(0, key, [value] * len(frame))
            rows[name].append(frame)
    for rid, run in planned.items():
        if rid in found:
            continue
        point = plan["points"][run["point"]]
        failed = failed_path(study_dir, rid)
        error = json.loads(failed.read_text()).get("error") if failed.exists() else None
        runs.append({"run_id": rid, "point": run["point"], **point["factors"], "trial": run["trial"],
                     "seed": run["seed"], "status": "failed" if failed.exists() else "pending",
                     "wall_s": None, "error": error, "in_plan": True})  # fmt: skip
    tables = {"runs": pd.DataFrame(runs, columns=["run_id", "point", *factor_columns, "trial", "seed", "status",
                                                  "wall_s", "error", "in_plan"])}  # fmt: skip
    tables["runs"] = tables["runs"].sort_values(
        ["in_plan", "point", "trial"], ascending=[False, True, True], ignore_index=True
    )
    for name, frames in rows.items():
        tables[name] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run_id", "point"])
    for frame in tables.values():
        _factor_frame(frame, factor_columns)
    in_plan = set(planned) if planned else found
    tables["summaries"] = summarise(
        tables["flows"][tables["flows"]["run_id"].isin(in_plan)],
        tables["bottleneck"][tables["bottleneck"]["run_id"].isin(in_plan)],
        factor_columns,
        plan.get("metrics"),
    )
    return tables


def rebuild_catalog(study_dir: Path) -> Path:
    """Rebuild ``catalog.duckdb`` from the run files and the plan; replaced atomically."""
    import duckdb

    study_dir = Path(study_dir)
    tables = collect(study_dir)

    def write(tmp: Path) -> None:
        tmp.unlink()
        with duckdb.connect(str(tmp)) as con:
            for name, frame in tables.items():
                con.register("frame", frame)
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')
                con.unregister("frame")

    return atomic_write(study_dir / "catalog.duckdb", write)


def catalog_stale(study_dir: Path) -> bool:
    """True when the catalog is missing or older than the runs, failures or plan."""
    study_dir = Path(study_dir)
    catalog = study_dir / "catalog.duckdb"
    if not catalog.exists():
        return True
    built = catalog.stat().st_mtime_ns
    for path in (runs_dir(study_dir), study_dir / "failed", study_dir / "plan.json"):
        if path.exists() and path.stat().st_mtime_ns > built:
            return True
    return False
