"""A study's catalog: SQL over it (:func:`query`) and its tables as DataFrames (:func:`load`).

The catalog (``catalog.duckdb``) is rebuilt from the run files whenever they are newer,
and when it cannot be read: a missing table, or a block whose checksum fails (DuckDB
checks each block it reads), is rebuilt once and the read repeated. ``flow_series`` and
``bottleneck_series`` are views over the run files.

:func:`query` runs the user's SQL over a read-only view of the study: the catalog opened
read-only, then DuckDB's file access switched off (``enable_external_access = false``,
only the verified run files behind the views allowed, ``lock_configuration = true`` so
the SQL cannot switch it back), and only ``SELECT`` and ``EXPLAIN`` statements taken:
``COPY ... TO``, ``ATTACH``, ``INSTALL``, ``SET`` and the like are refused in one line.
``allow_files=True`` (``l4slab query --allow-files``) runs the SQL with DuckDB's defaults.
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
    rebuilt once (a damaged one with a warning saying why) and reopened."""
    import duckdb

    path = _catalog(directory)
    for attempt in range(2):
        why = None  # stays None for a catalog of an older layout: rebuilt without a warning
        try:
            con = duckdb.connect(str(path), read_only=True)
            try:
                present = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
                missing = [name for name in TABLE_NAMES if name not in present]
                if not missing and "catalog_format" in present:
                    version = con.execute("SELECT max(version) FROM catalog_format").fetchone()[0]
                    if version == store.CATALOG_FORMAT:
                        return con
                elif missing:
                    why = f"no table {missing[0]!r}"
            except duckdb.Error as err:
                why = " ".join(str(err).split())[:160]
            con.close()
        except duckdb.Error as err:
            why = " ".join(str(err).split())[:160]
        if attempt == 0:
            if why is not None:
                store.warn(f"{path}: damaged ({why}); rebuilt from the run files")
            path = _catalog(directory, rebuild=True)
    raise store.CatalogError(f"{path}: unreadable even after a rebuild")


def _series_views(con, directory: Path) -> list[str]:
    """Views flow_series, bottleneck_series and (web studies) requests over the run files
    that verify now (each file's bytes against its recorded checksum; a corrupt one is named
    and left out); returns the files' paths."""
    records = store.load_records(directory)
    files: list[str] = []
    for rid in con.execute("SELECT run_id FROM runs WHERE status = 'done'").fetchall():
        path = store.run_path(directory, rid[0])
        try:
            store.verify_run_file(path, records, decode=False)
        except (OSError, store.CorruptRunFile) as err:
            store.warn(f"{err}; left out of the series views")
            continue
        files.append(str(path.resolve()))
    if not files:
        return files
    import duckdb

    quoted = ", ".join("'" + file.replace("'", "''") + "'" for file in files)

    for table in ("flow_series", "bottleneck_series", "requests"):
        try:
            con.execute(
                f"CREATE TEMP VIEW {table} AS SELECT regexp_extract(filename, '([0-9a-f]{{64}})\\.parquet$', 1) "
                f"AS run_id, COLUMNS('^{table}\\.(.*)$') AS \"\\1\" FROM read_parquet([{quoted}], "
                f"filename=true, union_by_name=true) WHERE \"table\" = '{table}'"
            )
        except duckdb.Error:
            if table != "requests":  # a study without web traffic has no request columns: no view
                raise
    return files


#: Statement types the default (read-only) query runs: reads of the study, nothing else.
READ_STATEMENTS = ("SELECT", "EXPLAIN")


def _statements(con, sql: str) -> list[str]:
    """The statement types of ``sql`` (``SELECT``, ``COPY``, ...); a syntax error or SQL with
    no statement is one line."""
    import duckdb

    try:
        kinds = [statement.type.name for statement in con.extract_statements(sql)]
    except duckdb.Error as err:
        raise ScenarioError(f"query: {' '.join(str(err).split())[:300]}") from None
    if not kinds:
        raise ScenarioError("query: the SQL holds no statement; e.g. \"SELECT * FROM summaries\"")
    return kinds


def _read_only(con, files: list[str]) -> None:
    """Switch DuckDB's file access off for the rest of the connection: only the run files
    behind the series views stay readable, and the setting is locked."""
    con.execute("SET allowed_paths = $paths", {"paths": files})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _damage(con) -> str | None:
    """Why the catalog cannot be read back (DuckDB checks each block's checksum as it
    reads it), or None when every table reads."""
    import duckdb

    try:
        for name in TABLE_NAMES:
            con.sql(f'SELECT * FROM "{name}"').to_arrow_table()
    except duckdb.Error as err:
        return " ".join(str(err).split())[:160]
    return None


def query(directory: str | os.PathLike[str], sql: str, *, allow_files: bool = False) -> pd.DataFrame:
    """Run SQL over the study's catalog (tables runs, flows, bottleneck, classes,
    summaries; views flow_series, bottleneck_series and, with web traffic, requests over
    the run files), read-only unless ``allow_files`` (see the module docstring)."""
    import duckdb

    directory = Path(directory)
    if "\0" in sql:
        raise ScenarioError("query: the SQL holds a NUL character")
    if not sql.strip():
        raise ScenarioError("query: the SQL is empty; e.g. \"SELECT * FROM summaries\"")
    for attempt in range(2):
        with _connect(directory) as con:
            kinds = _statements(con, sql)
            refused = [kind for kind in kinds if kind not in READ_STATEMENTS]
            if refused and not allow_files:
                raise ScenarioError(
                    f"query: {refused[0]} statements are refused: the query reads the study only "
                    f"(SELECT, EXPLAIN); --allow-files runs any SQL with file access"
                )
            files = _series_views(con, directory) if ("_series" in sql or "requests" in sql) else []
            if not allow_files:
                _read_only(con, files)
            try:
                return con.execute(sql).df()
            except duckdb.Error as err:
                damage = _damage(con) if attempt == 0 else None
                if damage is not None:
                    store.warn(f"{directory / store.CATALOG}: damaged ({damage}); rebuilt from the run files")
                    con.close()
                    _catalog(directory, rebuild=True)
                    continue
                raise ScenarioError(f"query: {' '.join(str(err).split())[:300]}") from None
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class StudyData:
    """A study's catalog as DataFrames (see docs/studies.md)."""

    directory: Path
    runs: pd.DataFrame
    flows: pd.DataFrame
    bottleneck: pd.DataFrame
    classes: pd.DataFrame
    summaries: pd.DataFrame

    def current(self) -> "StudyData":
        """Only the runs of the current plan (``runs.in_plan``): what a report counts. Run
        files of another plan of the study (another panel, ``--set``, an earlier engine
        model) stay in the catalog, marked ``in_plan = false``."""
        if "in_plan" not in self.runs:
            return self
        runs = self.runs[self.runs["in_plan"].astype(bool)].reset_index(drop=True)
        ids = set(runs["run_id"])

        def keep(frame: pd.DataFrame) -> pd.DataFrame:
            return frame[frame["run_id"].isin(ids)].reset_index(drop=True) if "run_id" in frame else frame

        return StudyData(self.directory, runs, keep(self.flows), keep(self.bottleneck), keep(self.classes),
                         self.summaries)  # fmt: skip

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
    import duckdb

    directory = Path(directory)
    for attempt in range(2):
        with _connect(directory) as con:
            try:
                tables = {name: con.execute(f'SELECT * FROM "{name}"').df() for name in TABLE_NAMES}
                break
            except duckdb.Error as err:
                if attempt:
                    raise store.CatalogError(f"{directory / store.CATALOG}: unreadable even after a rebuild") from None
                why = " ".join(str(err).split())[:160]
                store.warn(f"{directory / store.CATALOG}: damaged ({why}); rebuilt from the run files")
        _catalog(directory, rebuild=True)
    return StudyData(directory, tables["runs"], tables["flows"], tables["bottleneck"], tables["classes"],
                     tables["summaries"])  # fmt: skip
