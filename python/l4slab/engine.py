"""The compiled engine ``l4slab._core``, behind the only import of it in the package.

Everything that talks to the Rust engine goes through here: :func:`simulate` (run a
resolved config), :func:`check` (validate one without running it), :func:`version`
and :func:`schema_json` (the engine's self-description, read by :mod:`l4slab.schema`).
Engine errors become one-line :class:`~l4slab.errors.EngineError` or
:class:`~l4slab.errors.ScenarioError`; a package whose engine was never built raises
:class:`~l4slab.errors.EngineUnavailableError` on first use.
"""

from __future__ import annotations

import json
from functools import lru_cache
from types import ModuleType
from typing import Any, Mapping

from .errors import EngineError, EngineUnavailableError, ScenarioError

__all__ = ["simulate", "check", "version", "schema_json"]


@lru_cache(maxsize=1)
def _core() -> ModuleType:
    try:
        from . import _core as core
    except ImportError as err:
        raise EngineUnavailableError(
            f"the compiled engine l4slab._core is not importable ({err}); "
            "build it with `pip install .` from the repository (needs a Rust toolchain)"
        ) from None
    return core


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())


def simulate(config: Mapping[str, Any], records_dir: str | None = None) -> tuple[dict[str, Any], float]:
    """Run a resolved engine config; return ``(results dict, engine wall seconds)``.

    ``results["files"]`` maps the name of each file the run's measurement writers wrote
    beside the results to its bytes (``capture.pcapng`` with a packet capture, whose
    counts are ``results["capture"]``). With ``records_dir``, the per-request and
    closed-flow records are streamed into spill files there (:mod:`l4slab.records`)
    and left out of the results."""
    try:
        config_json = json.dumps(config, allow_nan=False)
        if records_dir is None:
            results_json, wall_s, files = _core().simulate(config_json)
        else:
            results_json, wall_s, files = _core().simulate(config_json, str(records_dir))
    except ValueError as err:
        raise EngineError(f"engine: {_one_line(err)}") from None
    raw = json.loads(results_json)
    # Bytes, not JSON: written beside the run as they are (results.RunResult.files).
    raw["files"] = dict(files)
    return raw, wall_s


def check(config: Mapping[str, Any]) -> None:
    """Let the engine validate what only it knows (e.g. ``cc_params``); its one-line
    message becomes a user error (:class:`ScenarioError`)."""
    try:
        _core().check(json.dumps(config, allow_nan=False))
    except ValueError as err:
        raise ScenarioError(_one_line(err)) from None


def version() -> str:
    """Engine version (part of a run's identity)."""
    return _core().version()


def schema_json() -> str:
    """The engine's ``EngineSchema`` as JSON (crates/l4slab-core/src/schema.rs)."""
    core = _core()
    if not hasattr(core, "schema"):
        raise EngineUnavailableError(
            "the compiled engine l4slab._core has no schema(); rebuild it from this repository with `pip install .`"
        )
    return core.schema()
