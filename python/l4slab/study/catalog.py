"""A study's catalog: SQL over it (:func:`query`) and its tables as DataFrames (:func:`load`).

The catalog (``catalog.duckdb``) is rebuilt from the run files whenever they are newer;
``flow_series`` and ``bottleneck_series`` are views over the run files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import ScenarioError
from . import store

__all__ = ["query", "load", "StudyData"]


TABLE_NAMES = ("runs", "flows", "bottleneck", "classes", "summaries")


def _catalog(directory: Path, rebuild: bool = False) -> Path:
    store.load_plan(directory)  # a NUL in the name, a truncated or ill-typed plan: one line here
    if directory.exists() and not directory.is_dir():
        raise ScenarioError(f"{directory}: not a study directory (a file)")
    if not (directory / "plan.json").exists() and not store.runs_dir(directory).exists():
        raise ScenarioError(f"{directory}: not a study directory (no plan.json or runs/)")
    if rebuild or store.catalog_stale(directory):
        store.rebuild_catalog(directory)
    return directory / store.CATALOG


def _connect(directory: Path):
    """A read-only connection to a fresh catalog; a missing, stale, unreadable or
    incomplete catalog (no such table), or one of another :data:`store.CATALOG_FORMAT`, is
    rebuilt once and reopened."""
    import duckdb

    path = _catalog(directory)
    for attempt in range(2):
        try:
            con = duckdb.connect(str(path), read_only=True)
            try:
                present = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
                if all(name in present for name in TABLE_NAMES) and "catalog_format" in present:
                    version = con.execute("SELECT max(version) FROM catalog_format").fetchone()[0]
                    if version == store.CATALOG_FORMAT:
                        return con
            except duckdb.Error:
                pass
            con.close()
        except duckdb.Error:
            pass
        if attempt == 0:
            path = _catalog(directory, rebuild=True)
    raise store.CatalogError(f"{path}: unreadable even after a rebuild")


def _series_views(con, directory: Path) -> None:
    """Views flow_series, bottleneck_series and (web studies) requests over the run files
    that verify now (each file's bytes against its recorded checksum; a corrupt one is named
    and left out)."""
    records = store.load_records(directory)
    files = []
    for rid in con.execute("SELECT run_id FROM runs WHERE status = 'done'").fetchall():
        path = store.run_path(directory, rid[0])
        try:
            store.verify_run_file(path, records, decode=False)
        except (OSError, store.CorruptRunFile) as err:
            store.warn(f"{err}; left out of the series views")
            continue
        files.append("'" + str(path.resolve()).replace("'", "''") + "'")
    if not files:
        return
    import duckdb

    for table in ("flow_series", "bottleneck_series", "requests"):
        try:
            con.execute(
                f"CREATE TEMP VIEW {table} AS SELECT regexp_extract(filename, '([0-9a-f]{{64}})\\.parquet$', 1) "
                f"AS run_id, COLUMNS('^{table}\\.(.*)$') AS \"\\1\" FROM read_parquet([{', '.join(files)}], "
                f"filename=true, union_by_name=true) WHERE \"table\" = '{table}'"
            )
        except duckdb.Error:
            if table != "requests":  # a study without web traffic has no request columns: no view
                raise


def query(directory: str | os.PathLike[str], sql: str) -> pd.DataFrame:
    """Run SQL over the study's catalog (tables runs, flows, bottleneck, classes,
    summaries; views flow_series, bottleneck_series and, with web traffic, requests over
    the run files)."""
    import duckdb

    directory = Path(directory)
    if "\0" in sql:
        raise ScenarioError("query: the SQL holds a NUL character")
    with _connect(directory) as con:
        if "_series" in sql or "requests" in sql:
            _series_views(con, directory)
        try:
            return con.execute(sql).df()
        except duckdb.Error as err:
            raise ScenarioError(f"query: {' '.join(str(err).split())[:300]}") from None


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

    def requests(self, run_ids: list[str] | None = None) -> pd.DataFrame:
        """The web requests (``requests`` table: size, start, FCT, ideal FCT, completion
        efficiency, cc, SYN retransmissions, ...) of the given (default: all done) runs, with
        ``run_id``, ``point``, ``trial`` and the study's factor columns; empty without web traffic."""
        ids = run_ids if run_ids is not None else self.runs.loc[self.runs["status"] == "done", "run_id"].tolist()
        frames = []
        for rid in ids:
            frame = store.read_run_table(store.run_path(self.directory, rid), "requests")
            if len(frame):
                frame.insert(0, "run_id", rid)
                frames.append(frame)
        if not frames:
            return pd.DataFrame()
        fixed = {"seed", "status", "wall_s", "error", "in_plan"}
        runs = self.runs[[c for c in self.runs.columns if c not in fixed]]
        return pd.concat(frames, ignore_index=True).merge(runs, on="run_id", how="left")


def load(directory: str | os.PathLike[str]) -> StudyData:
    """The study's catalog tables (rebuilt first if the run files are newer)."""
    directory = Path(directory)
    with _connect(directory) as con:
        tables = {name: con.execute(f'SELECT * FROM "{name}"').df() for name in TABLE_NAMES}
    return StudyData(directory, tables["runs"], tables["flows"], tables["bottleneck"], tables["classes"],
                     tables["summaries"])  # fmt: skip
