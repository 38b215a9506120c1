"""Studies: sweeps of many runs as one resumable command (docs/studies.md).

::

    import l4slab.study as study
    out = study.run("pam.toml", out="results/pam")          # validates, runs what is missing
    data = study.load(out)                                   # DataFrames: runs, flows, bottleneck, classes, summaries
    study.query(out, "SELECT * FROM summaries WHERE metric = 'goodput_mbps'")

Modules: :mod:`.spec` (study files, expansion, seeds), :mod:`.registry` (the built-in
studies, their presets and report sections), :mod:`.runs` (plan, run, status),
:mod:`.executors` (process pool, Dask), :mod:`.store` (run files and the DuckDB
catalog), :mod:`.catalog` (query, load), :mod:`.summary` (mean and 95 % CI per point),
:mod:`.report` (``l4slab study report``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy

if TYPE_CHECKING:
    from .catalog import StudyData, load, query
    from .registry import builtin_studies
    from .runs import emit_jobs, plan, run, run_one, status
    from .spec import load_study

__all__ = [
    "builtin_studies", "run", "run_one", "emit_jobs", "plan", "status", "load", "query", "StudyData", "load_study",
]  # fmt: skip

#: The package's names, imported on first use by the module that defines them, so that
#: ``l4slab study list`` / ``study show`` start without pandas, DuckDB or matplotlib.
_LAZY = {
    "StudyData": ".catalog",
    "load": ".catalog",
    "query": ".catalog",
    "builtin_studies": ".registry",
    "emit_jobs": ".runs",
    "plan": ".runs",
    "run": ".runs",
    "run_one": ".runs",
    "status": ".runs",
    "load_study": ".spec",
}


__getattr__, __dir__ = lazy.attach(__name__, _LAZY)
