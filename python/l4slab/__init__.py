"""l4slab: a packet-level L4S network simulator (Rust engine, Python front end).

Quick use::

    import l4slab
    result = l4slab.run("examples/reference.toml", duration="10s")
    result.flows            # one row per flow (pandas)
    result.flow_series      # per-flow time series, long format
    l4slab.rebin(result.bottleneck_series, "1s")   # 1-s mark/drop probability
    result.write("results/ref")

See README.md for the scenario format and docs/outputs.md for the output files.

This module owns the package's top-level names. They, and the subpackages
(``l4slab.study``, ``l4slab.analysis``, ...), are imported on first use, so that
``l4slab --version`` and ``l4slab --help`` start without pandas, pyarrow, duckdb or
matplotlib.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import lazy
from .errors import EngineError, EngineUnavailableError, ScenarioError
from .version import PACKAGE_VERSION as __version__

if TYPE_CHECKING:
    from .results import RunResult, rebin
    from .rundir import write_run
    from .runner import run
    from .scenario import Scenario, load_scenario, reference_scenario_path

__all__ = [
    "__version__",
    "run",
    "RunResult",
    "rebin",
    "load_scenario",
    "Scenario",
    "write_run",
    "reference_scenario_path",
    "ScenarioError",
    "EngineError",
    "EngineUnavailableError",
]

#: Top-level names imported on first use, by the module that defines them.
_LAZY = {
    "run": ".runner",
    "RunResult": ".results",
    "rebin": ".results",
    "write_run": ".rundir",
    "load_scenario": ".scenario",
    "Scenario": ".scenario",
    "reference_scenario_path": ".scenario",
}


__getattr__, __dir__ = lazy.attach(__name__, _LAZY, submodules=True)
