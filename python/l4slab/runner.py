"""Running one scenario: validate and resolve it, let the engine simulate it, wrap the results.

``l4slab.run(scenario)`` accepts a path, a TOML string, a dict or a
:class:`~l4slab.scenario.Scenario`, hands the engine its JSON config (the engine
releases the GIL while it runs) and returns a :class:`~l4slab.results.RunResult`.
"""

from __future__ import annotations

from typing import Any

from . import engine, memory, schema
from .errors import ScenarioError
from .records import RecordSpill
from .results import RunResult, flows_frame
from .scenario import Scenario, coerce_scenario

__all__ = ["run"]


def run(scenario: Any, *, seed: int | None = None, max_memory: int | None = None, **overrides: Any) -> RunResult:
    """Run one scenario.

    ``scenario`` is a path, a TOML string, a dict or a :class:`Scenario`. ``seed``
    replaces the scenario's seed; ``overrides`` set other fields by path, with ``__``
    between levels: ``run("ref.toml", duration="5s", bottleneck__rate="50Mbit",
    flows__0__cc="reno")``. A run whose memory estimate exceeds ``max_memory`` bytes
    (default: ``L4SLAB_MAX_MEMORY``, else what the machine has available) is refused
    before it starts (:func:`l4slab.memory.check`).
    """
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ScenarioError(f"seed: {seed!r} is not an integer in 0..2^64-1")
    if isinstance(scenario, Scenario):
        validated = coerce_scenario(scenario, overrides or None)
        if seed is not None:
            validated = validated.model_copy(update={"seed": seed})
    else:
        if seed is not None:
            overrides = {**overrides, "seed": seed}
        validated = coerce_scenario(scenario, overrides or None)
    config = validated.resolve()
    memory.check(config, max_memory)
    if not config.get("sources"):
        raw, wall_s = engine.simulate(config)
        return RunResult(scenario=validated, config=config, raw=raw, wall_s=wall_s, engine_version=engine.version(),
                         model_version=schema.model_version())
    # Traffic sources close a connection per request: their records stream through
    # spill files into Parquet (l4slab.records) instead of the results JSON.
    spill = RecordSpill()
    try:
        raw, wall_s = engine.simulate(config, records_dir=str(spill.path))
        spill.convert(flows_frame)
    except BaseException:
        spill.cleanup()
        raise
    return RunResult(
        scenario=validated, config=config, raw=raw, wall_s=wall_s, engine_version=engine.version(), records=spill,
        model_version=schema.model_version(),
    )
