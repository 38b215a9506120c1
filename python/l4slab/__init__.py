"""l4slab: a packet-level L4S network simulator (Rust engine, Python front end).

Quick use::

    import l4slab
    result = l4slab.run("examples/reference.toml", duration="10s")
    result.flows            # one row per flow (pandas)
    result.flow_series      # per-flow time series, long format
    l4slab.rebin(result.bottleneck_series, "1s")   # 1-s mark/drop probability
    result.write("results/ref")

See README.md for the scenario format and docs/outputs.md for the output files.
"""

from __future__ import annotations

from .errors import EngineError, EngineUnavailableError, ScenarioError
from .results import RunResult, rebin
from .rundir import write_run
from .runner import run
from .scenario import Scenario, load_scenario, reference_scenario_path
from .version import PACKAGE_VERSION as __version__

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
