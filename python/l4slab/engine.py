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

__all__ = ["simulate", "check", "check_qdisc", "version", "schema_json"]


#: glibc's ``M_MMAP_THRESHOLD`` (malloc.h) and the value it starts at, 128 KiB.
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_BYTES = 128 << 10


def _return_freed_memory() -> None:
    """Fix glibc's mmap threshold at its initial 128 KiB. Left dynamic, it rises to the
    size of the largest block freed (up to 32 MiB), after which the engine's vectors,
    their bytes and the DataFrames built from them come from the heap, whose freed
    space stays resident: the peak of a run would depend on what ran before it. Fixed,
    every large array is its own mapping, returned when freed, and a run's peak is the
    arrays alive together (:mod:`l4slab.memory`). A no-op off glibc."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def _trim_heap() -> None:
    """Give the heap's free pages back to the system (glibc ``malloc_trim``, which also
    releases free pages below the top of the heap). The engine's per-flow state (TCP
    senders, queues, the recorder's per-flow rows) is many allocations under the mmap
    threshold: freed when the run returns, but the Python objects of the hand-over are
    allocated above it, so glibc's automatic trim (top of the heap only) keeps it
    resident through the rest of the run. A no-op off glibc."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


@lru_cache(maxsize=1)
def _core() -> ModuleType:
    _return_freed_memory()
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
            results_json, columns, wall_s, files = _core().simulate(config_json)
        else:
            results_json, columns, wall_s, files = _core().simulate(config_json, str(records_dir))
    except ValueError as err:
        raise EngineError(f"engine: {_one_line(err)}") from None
    except MemoryError:
        raise EngineError(
            "engine: out of memory while handing the results over (see `l4slab run --max-memory`)"
        ) from None
    _trim_heap()
    raw = json.loads(results_json)
    del results_json
    _place_columns(raw, columns)
    # Bytes, not JSON: written beside the run as they are (results.RunResult.files).
    raw["files"] = dict(files)
    return raw, wall_s


def _place_columns(raw: dict[str, Any], columns: dict[str, tuple[str, bytes, list[str] | None]]) -> None:
    """Put the series and trace columns the binding handed over as bytes
    (``crates/l4slab-py/src/lib.rs`` ``take_columns``) into ``raw`` at their paths, as
    numpy arrays over those bytes (no copy): the results dict then has the shape the
    engine's JSON gives them, with arrays where the JSON had lists. ``cc_mode`` arrives
    as codes into its names; the trace's ``flow`` and ``class`` widen to int64 (the
    columns the JSON path gave, so output files keep their schema)."""
    import numpy as np

    for path, (dtype, data, names) in columns.items():
        values = np.frombuffer(data, dtype=dtype)
        if names is not None:
            values = np.asarray(names, dtype=object)[values] if len(values) else np.asarray([], dtype=object)
        elif values.dtype.kind == "u":
            values = values.astype(np.int64)
        *parents, leaf = path.split(".")
        node: Any = raw
        for part in parents:
            if part == "sojourn_class_ms":
                node = node.setdefault(part, [])
                continue
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):  # bottleneck_series.sojourn_class_ms.<k>, in order
            node.append(values)
        else:
            node[leaf] = values


def check(config: Mapping[str, Any]) -> None:
    """Let the engine validate what only it knows (e.g. ``cc_params``); its one-line
    message becomes a user error (:class:`ScenarioError`)."""
    try:
        _core().check(json.dumps(config, allow_nan=False))
    except ValueError as err:
        raise ScenarioError(_one_line(err)) from None


def check_qdisc(config: Mapping[str, Any]) -> None:
    """Let the engine validate one qdisc config (engine units): its ranges and its rules
    across parameters; its one-line message (``field: ...``) becomes a :class:`ScenarioError`."""
    try:
        _core().check_qdisc(json.dumps(config, allow_nan=False))
    except ValueError as err:
        raise ScenarioError(_one_line(err)) from None


def version() -> str:
    """Engine version (part of a run's identity)."""
    return _core().version()


def has_emulator() -> bool:
    """Whether the installed extension carries the emulator (``emu_main``: what ``pip install``
    ships); False when the extension is missing or older."""
    try:
        return hasattr(_core(), "emu_main")
    except EngineUnavailableError:
        return False


def emulator_main(argv: list[str]) -> int:
    """Run the emulator built into the extension with ``argv`` (``l4slab-emu``'s arguments)."""
    return int(_core().emu_main(argv))


def udp_prague_main(argv: list[str]) -> int:
    """Run the UDP-Prague program built into the extension (``l4slab-udp-prague``'s arguments)."""
    core = _core()
    if not hasattr(core, "udp_prague_main"):
        raise EngineUnavailableError(
            "the compiled engine l4slab._core has no udp_prague_main(); rebuild it from this repository with "
            "`pip install .`"
        )
    return int(core.udp_prague_main(argv))


def schema_json() -> str:
    """The engine's ``EngineSchema`` as JSON (crates/l4slab-core/src/schema.rs)."""
    core = _core()
    if not hasattr(core, "schema"):
        raise EngineUnavailableError(
            "the compiled engine l4slab._core has no schema(); rebuild it from this repository with `pip install .`"
        )
    return core.schema()
