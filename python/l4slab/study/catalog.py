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
