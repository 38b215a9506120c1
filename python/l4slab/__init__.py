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

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("l4slab")
except _metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

from .errors import EngineError, EngineUnavailableError, ScenarioError
from .output import write_run
from .runner import RunResult, rebin, run
from .scenario import Scenario, load_scenario

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


def reference_scenario_path():
    """Path of the packaged reference scenario (2 CUBIC flows, 100 Mbit/s, 10 ms, 2 BDP bfifo)."""
    from importlib import resources

    return resources.files(__name__).joinpath("scenarios", "reference.toml")
