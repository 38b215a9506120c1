"""Studies: sweeps of many runs as one resumable command (docs/studies.md).

::

    import l4slab.study as study
    out = study.run("pam.toml", out="results/pam")          # validates, runs what is missing
    data = study.load(out)                                   # DataFrames: runs, flows, bottleneck, classes, summaries
    study.query(out, "SELECT * FROM summaries WHERE metric = 'goodput_mbps'")

Modules: :mod:`.spec` (study files, expansion, seeds), :mod:`.store` (run files and
the DuckDB catalog), :mod:`.executors` (process pool, Dask), :mod:`.summary`
(mean and 95 % CI per point).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..errors import ScenarioError
from ..output import write_json, write_text
from . import store
from .spec import StudySpec, builtin_studies, load_study

__all__ = [
    "builtin_studies", "run", "run_one", "emit_jobs", "plan", "status", "load", "query", "StudyData", "load_study",
]  # fmt: skip

PLAN_SCHEMA = "l4slab.study.plan/1"


def _plan_dict(spec: StudySpec) -> dict[str, Any]:
    return {
        "schema": PLAN_SCHEMA,
        "study": spec.name,
        "seed": spec.seed,
        "trials": spec.trials,
        "metrics": spec.metrics,
        "engine_version": spec.engine_version,
        "factors": [
            {"path": f.path, "column": f.column, "values": list(f.values), "preset": f.preset and f.preset.name}
            for f in spec.factors
        ],
        "points": [
            {
                "index": p.index,
                "key": p.key,
                "factors": {f.column: p.values[f.path] for f in spec.factors},
                "scenario": p.scenario,
                "config": p.config,
            }
            for p in spec.points
        ],
        "runs": [{"id": r.id, "point": r.point, "trial": r.trial, "seed": r.seed} for r in spec.runs],
    }


def _task(plan: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    point = plan["points"][run["point"]]
    return {
        "id": run["id"],
        "engine_version": plan["engine_version"],
        "config": {**point["config"], "seed": run["seed"]},
        "scenario": point["scenario"],
        "meta": {
            "id": run["id"],
            "study": plan["study"],
            "point": run["point"],
            "point_key": point["key"],
            "factors": point["factors"],
            "trial": run["trial"],
            "seed": run["seed"],
        },
    }


def default_out(spec: StudySpec) -> Path:
    return Path("results") / spec.name


def plan(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> tuple[Path, dict[str, Any]]:
    """Validate and expand the study file, write ``study.toml`` and ``plan.json`` into the
    study directory (default ``results/<name>``); return (directory, plan)."""
    spec = load_study(path)
    directory = Path(out) if out is not None else default_out(spec)
    plan_data = _plan_dict(spec)
    directory.mkdir(parents=True, exist_ok=True)
    write_text(directory / "study.toml", spec.source_text)
    write_json(directory / "plan.json", plan_data)
    return directory, plan_data


def _require_plan(directory: Path) -> dict[str, Any]:
    plan_data = store.load_plan(directory)
    if plan_data is None:
        raise ScenarioError(f"{directory}: not a study directory (no plan.json); run `l4slab study run FILE --out DIR`")
    return plan_data


def pending_runs(directory: Path, plan_data: dict[str, Any]) -> list[dict[str, Any]]:
    """Planned runs without a valid run file (failed runs are retried)."""
    status = store.run_status(directory, [r["id"] for r in plan_data["runs"]])
    return [r for r in plan_data["runs"] if status[r["id"]] != "done"]


@dataclass
class RunReport:
    """What :func:`run` did."""

    directory: Path
    total: int
    skipped: int
    done: int
    failed: int
    errors: dict[str, str]


def run(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    executor: str | None = "local",
    jobs: int | None = None,
    progress: bool = False,
    on_run: Callable[[str, str | None], None] | None = None,
) -> RunReport:
    """Run a study: validate and expand it, run every run without a valid result file
    (``executor``: ``local``, ``dask-local`` or ``dask://HOST:PORT``), then rebuild the
    catalog. Re-running continues where an interrupted run stopped."""
    from .executors import parse_executor, run_dask, run_local

    kind, address = parse_executor(executor)
    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs: {jobs} is not a positive number of processes; expected e.g. 4")
    directory, plan_data = plan(path, out)
    todo = pending_runs(directory, plan_data)
    tasks = [_task(plan_data, r) for r in todo]
    errors: dict[str, str] = {}
    counts = {"done": 0}

    bar = _progress(progress, len(plan_data["runs"]), len(plan_data["runs"]) - len(todo))

    def on_done(outcome) -> None:
        rid, data, _wall, error = outcome
        if data is not None:
            store.write_run_file(directory, rid, data)
            counts["done"] += 1
        else:
            store.write_failure(directory, rid, error or "unknown error")
            errors[rid] = error or "unknown error"
        if bar is not None:
            bar[0].advance(bar[1])
        if on_run is not None:
            on_run(rid, error)

    try:
        if bar is not None:
            bar[0].start()
        if kind == "local":
            run_local(tasks, jobs, on_done)
        else:
            run_dask(tasks, address, jobs, on_done)
    finally:
        if bar is not None:
            bar[0].stop()
        store.rebuild_catalog(directory)
    return RunReport(directory, len(plan_data["runs"]), len(plan_data["runs"]) - len(todo), counts["done"],
                     len(errors), errors)  # fmt: skip


def _progress(enabled: bool, total: int, completed: int):
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = progress.add_task("runs", total=total, completed=completed)
    return progress, task


def run_one(directory: str | os.PathLike[str], rid: str, *, force: bool = False) -> str | None:
    """Run one planned run in this process and write its file; None on success, else the
    error. A run that is already done is skipped (unless ``force``)."""
    from .executors import execute

    directory = Path(directory)
    plan_data = _require_plan(directory)
    runs = {r["id"]: r for r in plan_data["runs"]}
    if rid not in runs:
        raise ScenarioError(f"run-one: {rid!r} is not a run of {directory}/plan.json")
    if not force and store.read_run_meta(store.run_path(directory, rid)) is not None:
        return None
    _, data, _, error = execute(_task(plan_data, runs[rid]))
    if data is None:
        store.write_failure(directory, rid, error or "unknown error")
        return error or "unknown error"
    store.write_run_file(directory, rid, data)
    return None


def emit_jobs(path: str | os.PathLike[str], jobs_file: str | os.PathLike[str], out=None) -> tuple[Path, int]:
    """Plan the study and write one ``l4slab study run-one DIR ID`` line per pending run."""
    directory, plan_data = plan(path, out)
    todo = pending_runs(directory, plan_data)
    absolute = shlex.quote(str(directory.resolve()))
    lines = [f"l4slab study run-one {absolute} {r['id']}\n" for r in todo]
    write_text(jobs_file, "".join(lines))
    return directory, len(lines)


def _catalog(directory: Path, rebuild: bool = False) -> Path:
    if not (directory / "plan.json").exists() and not store.runs_dir(directory).exists():
        raise ScenarioError(f"{directory}: not a study directory (no plan.json or runs/)")
    if rebuild or store.catalog_stale(directory):
        store.rebuild_catalog(directory)
    return directory / "catalog.duckdb"


def query(directory: str | os.PathLike[str], sql: str) -> pd.DataFrame:
    """Run SQL over the study's catalog (tables runs, flows, bottleneck, classes,
    summaries; views flow_series and bottleneck_series over the run files)."""
    import duckdb

    directory = Path(directory)
    catalog = _catalog(directory)
    with duckdb.connect(str(catalog), read_only=True) as con:
        pattern = str(store.runs_dir(directory).resolve() / "*.parquet").replace("'", "''")
        if any(store.runs_dir(directory).glob("*.parquet")):
            for table in ("flow_series", "bottleneck_series"):
                con.execute(
                    f"CREATE TEMP VIEW {table} AS SELECT regexp_extract(filename, '([0-9a-f]{{64}})\\.parquet$', 1) "
                    f"AS run_id, COLUMNS('^{table}\\.(.*)$') AS \"\\1\" FROM read_parquet('{pattern}', filename=true) "
                    f"WHERE \"table\" = '{table}'"
                )
        try:
            return con.execute(sql).df()
        except duckdb.Error as err:
            raise ScenarioError(f"query: {' '.join(str(err).split())}") from None


@dataclass
class StudyData:
    """A study's catalog as DataFrames (see docs/studies.md)."""

    directory: Path
    runs: pd.DataFrame
    flows: pd.DataFrame
    bottleneck: pd.DataFrame
    classes: pd.DataFrame
    summaries: pd.DataFrame

    def series(self, table: str = "flow_series", run_ids: list[str] | None = None) -> pd.DataFrame:
        """``flow_series`` or ``bottleneck_series`` of the given (default: all done) runs, with ``run_id``."""
        if table not in ("flow_series", "bottleneck_series"):
            raise ScenarioError(f"series: {table!r} is not flow_series or bottleneck_series")
        ids = run_ids if run_ids is not None else self.runs.loc[self.runs["status"] == "done", "run_id"].tolist()
        frames = []
        for rid in ids:
            frame = store.read_run_table(store.run_path(self.directory, rid), table)
            frame.insert(0, "run_id", rid)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load(directory: str | os.PathLike[str]) -> StudyData:
    """The study's catalog tables (rebuilt first if the run files are newer)."""
    import duckdb

    directory = Path(directory)
    with duckdb.connect(str(_catalog(directory)), read_only=True) as con:
        tables = {name: con.execute(f'SELECT * FROM "{name}"').df() for name in
                  ("runs", "flows", "bottleneck", "classes", "summaries")}  # fmt: skip
    return StudyData(directory, tables["runs"], tables["flows"], tables["bottleneck"], tables["classes"],
                     tables["summaries"])  # fmt: skip


def status(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """done / pending / failed counts per factor value (plus a total row)."""
    directory = Path(directory)
    plan_data = _require_plan(directory)
    states = store.run_status(directory, [r["id"] for r in plan_data["runs"]])
    rows = []
    for r in plan_data["runs"]:
        point = plan_data["points"][r["point"]]
        rows.append({**point["factors"], "status": states[r["id"]]})
    frame = pd.DataFrame(rows)
    out = []
    for factor in plan_data["factors"]:
        column = factor["column"]
        for value, group in frame.groupby(frame[column].map(str), sort=False):
            counts = group["status"].value_counts()
            out.append({"factor": factor["path"], "value": value, **{s: int(counts.get(s, 0)) for s in
                        ("done", "pending", "failed")}})  # fmt: skip
    counts = frame["status"].value_counts()
    out.append({"factor": "(all)", "value": "", **{s: int(counts.get(s, 0)) for s in ("done", "pending", "failed")}})
    return pd.DataFrame(out, columns=["factor", "value", "done", "pending", "failed"])
