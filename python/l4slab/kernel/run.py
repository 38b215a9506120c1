"""One kernel-backend run: the scenario on the real Linux L4S stack in a UML guest in
virtual time, its results in the engine's schema.

Order of a run (docs/kernel.md):

1. resolve the scenario as ``l4slab run`` does; refuse what the kernel cannot honour
   (:func:`l4slab.kernel.testbed.check_config`, one line, before anything is started);
2. the guest kernel: the cached build for the project's files, or a build on first use
   (:func:`l4slab.kernel.build.ensure_kernel`);
3. the testbed script (:func:`l4slab.kernel.testbed.plan`), the flows' start jitter drawn
   as the engine draws it for the seed;
4. one boot (:func:`l4slab.kernel.guest.boot`) in a private temporary directory, bounded
   in virtual time (the scenario's duration + 60 s) and in wall time;
5. the probe's samples and the tools' counters become the raw results of a
   :class:`KernelRunResult` (:func:`l4slab.kernel.collect.collect`); the temporary
   directory is removed (``L4SLAB_KERNEL_KEEP_WORK=1`` keeps it for inspection).

Refusals raise :class:`~l4slab.kernel.testbed.KernelRefused` (a ScenarioError: exit 2);
a guest that hangs, crashes or fails its script raises an
:class:`~l4slab.errors.EngineError` with one line.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

from ..errors import EngineError, ScenarioError
from ..results import BackendRunResult
from ..scenario import Scenario, coerce_scenario
from ..scenario.resolve import resolving_for
from .testbed import KernelRefused, check_config, plan

__all__ = [
    "run_kernel",
    "KernelRunResult",
    "KernelRefused",
    "check_supported",
    "kernel_summary",
    "resolve",
    "kernel_inputs",
    "prepare_study",
]

#: Virtual seconds the guest script gets beyond the scenario's duration (setup, teardown).
SETUP_MARGIN_S = 60.0


@dataclass
class KernelRunResult(BackendRunResult):
    """A kernel-backend run: a :class:`~l4slab.results.RunResult` whose summary also says
    ``backend = "kernel"`` and carries a ``kernel`` block (the guest's kernel release, its
    wall time, the virtual time it ran, probe ticks skipped, per-flow measurements the
    engine's schema has no place for); its directory also holds ``kernel_meta.json``."""

    backend: ClassVar[str] = "kernel"
    block: ClassVar[str] = "kernel"
    meta_file: ClassVar[str] = "kernel_meta.json"

    def backend_block(self) -> dict[str, Any]:
        return kernel_summary(self.meta)


def kernel_summary(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's ``kernel`` block."""
    flows = meta.get("flows") or []
    return {
        "release": meta.get("release"),
        "guest_wall_s": meta.get("guest_wall_s"),
        "virtual_duration_s": meta.get("virtual_duration_s"),
        "probe_ticks_skipped": meta.get("probe_ticks_skipped"),
        "probe_errors": meta.get("probe_errors"),
        "softnet_dropped": meta.get("softnet_dropped"),
        "modules": [f.get("module") for f in flows],
        "flow_data_start_s": [f.get("data_start_s") for f in flows],
        "rwnd_limited_ms": [f.get("rwnd_limited_ms") for f in flows],
        "sndbuf_limited_ms": [f.get("sndbuf_limited_ms") for f in flows],
        "accecn_opt_seen": [f.get("accecn_opt_seen") for f in flows],
        "connect_s": [f.get("connect_s") for f in flows],
        # the scenario's own files ([kernel]) the guest was built with, by content hash
        "user_inputs": meta.get("user_inputs"),
        "sojourn": "time-sampled at every bin (dualpi2 delay_c/delay_l, pie delay, else backlog/rate)",
    }


def resolve(scenario: Any, *, seed: int | None = None, overrides: Mapping[str, Any] | None = None):
    """(validated scenario, resolved config) as ``l4slab run`` makes them, for the kernel
    backend: the config carries the scenario's ``[kernel]`` files by content hash and its
    flows may name the congestion controls they register."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise ScenarioError(f"seed: {seed!r} is not an integer in 0..2^64-1")
    validated: Scenario = coerce_scenario(scenario, dict(overrides or {}) or None)
    if seed is not None:
        validated = validated.model_copy(update={"seed": seed})
    with resolving_for("kernel"):
        return validated, validated.resolve()


def kernel_inputs(scenario: Scenario) -> dict[str, list[Path]]:
    """The scenario's own files for :func:`l4slab.kernel.build.ensure_kernel`
    (``extra_modules``: ``[kernel] cc_sources``; ``patches``)."""
    table = scenario.kernel
    if table is None:
        return {"extra_modules": [], "patches": []}
    return {"extra_modules": [Path(p) for p in table.cc_sources], "patches": [Path(p) for p in table.patches]}


def _user_inputs(config: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    table = config.get("kernel") or {}
    return {
        key: [(str(f["file"]), str(f["sha256"])) for f in table.get(key) or []] for key in ("cc_sources", "patches")
    }


def check_kernel_matches(kernel: Any, config: Mapping[str, Any]) -> None:
    """The guest ``kernel`` was built from the very files (by content) the resolved
    ``config`` names in its ``kernel`` table; else one line. A run's identity (a study's
    run id) holds their hashes, so a result is never one of another version of the file."""
    wanted = _user_inputs(config)
    meta = dict(getattr(kernel, "meta", {}) or {})
    built = {
        "cc_sources": [(Path(p).name, h) for p, h in (meta.get("user_modules") or {}).items()],
        "patches": [(Path(p).name, h) for p, h in (meta.get("user_patches") or {}).items()],
    }
    for key, files in wanted.items():
        if files != built[key]:
            shown = ", ".join(f"{name} ({digest[:12]})" for name, digest in files) or "none"
            has = ", ".join(f"{name} ({digest[:12]})" for name, digest in built[key]) or "none"
            raise EngineError(
                f"kernel.{key}: the scenario's {shown} is not what the guest kernel "
                f"{getattr(kernel, 'directory', '?')} was built with ({has}); a file changed since the "
                "scenario was read, or the kernel was chosen by hand: run again"
            )


def prepare_study(points: Any, progress: bool = False) -> None:
    """Before a study's workers start (``study run --backend kernel``): refuse what the
    kernel cannot honour (every point, one line) and build or find every guest the points
    need (the project's, and one per distinct set of ``[kernel]`` files), so workers only
    boot them."""
    from ..scenario import scenario_from_dict
    from .build import ensure_kernel

    variants: dict[tuple, dict[str, list[Path]]] = {}
    for point in points:
        scenario = scenario_from_dict(point.scenario)
        check_config(point.config, scenario)
        inputs = kernel_inputs(scenario)
        variants.setdefault(tuple(tuple(v) for v in inputs.values()), inputs)
    for inputs in variants.values() or [{}]:
        ensure_kernel(progress=progress, **inputs)


def check_supported(scenario: Any) -> None:
    """Refusals only (no kernel, no guest): raises :class:`KernelRefused`."""
    validated, config = resolve(scenario)
    check_config(config, validated)


def run_kernel(
    scenario: Any,
    *,
    seed: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    kernel: Any = None,
    work_dir: str | os.PathLike[str] | None = None,
    wall_limit_s: float | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> KernelRunResult:
    """Run ``scenario`` (a path, TOML string, dict or :class:`Scenario`) on the guest
    kernel (``kernel``: a :class:`~l4slab.kernel.build.Kernel`; default the cached build,
    built on first use with ``progress`` shown); return a :class:`KernelRunResult`.

    ``work_dir``: the guest's run directory (kept); default a temporary directory removed
    at the end. ``wall_limit_s``: the host wall bound of the boot (default
    :func:`l4slab.kernel.guest.default_wall_limit`)."""
    validated, config = resolve(scenario, seed=seed, overrides=overrides)
    check_config(config, validated)
    say = log or (lambda _message: None)
    from .collect import collect
    from .guest import boot

    if kernel is None:
        from .build import ensure_kernel

        kernel = ensure_kernel(progress=progress, **kernel_inputs(validated))
    check_kernel_matches(kernel, config)
    testbed = plan(validated, config)
    own_work = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="l4slab-kernel-")) if own_work else Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    previous_term = None

    def on_term(_signum, _frame):  # SIGTERM ends the run like Ctrl-C: the guest is killed, the directory removed
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        previous_term = signal.signal(signal.SIGTERM, on_term)
    started = time.monotonic()
    try:
        release = getattr(kernel, "release", "?")
        say(f"guest: linux {release}, {len(testbed.flows)} flows, {config['duration_ns'] / 1e9:g} s")
        if wall_limit_s is None:
            # the sleep to the router's uptime costs no wall time: bound the run's own part
            from .guest import default_wall_limit

            wall_limit_s = default_wall_limit(testbed.limit_s - testbed.clock_wait_s)
        guest = boot(
            kernel, work, testbed.script, limit_s=testbed.limit_s, wall_limit_s=wall_limit_s, seed=int(config["seed"])
        )
        if guest.rc != 0:
            raise EngineError(_guest_error(work, guest.rc, guest.log, testbed.limit_s))
        raw, measured = collect(testbed, config, work)
        meta = {
            "release": guest.release or getattr(kernel, "release", None),
            "guest_wall_s": guest.wall_s,
            "kernel": dict(getattr(kernel, "meta", {}) or {}),
            "qdisc": " ".join(testbed.qdisc),
            "reverse_qdisc": None if testbed.reverse_qdisc is None else " ".join(testbed.reverse_qdisc),
            "sysctls": testbed.sysctls,
            "launch_s": [f.launch_ns / 1e9 for f in testbed.flows],
            "user_inputs": config.get("kernel"),
            **measured,
        }
        return KernelRunResult(
            scenario=validated,
            config=config,
            raw=raw,
            wall_s=time.monotonic() - started,
            engine_version=f"linux {meta['release']} (l4slab kernel backend)",
            meta=meta,
        )
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
        if own_work and not os.environ.get("L4SLAB_KERNEL_KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)


def _guest_error(work: Path, rc: int, log: str, limit_s: float) -> str:
    """One line for a guest script that did not finish cleanly."""
    try:
        reason = (work / "error.txt").read_text(errors="replace").strip().splitlines()[0]
    except (OSError, IndexError):
        reason = ""
    if not reason:
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        reason = lines[-1] if lines else ""
    if rc == 137:
        return f"kernel guest: the testbed script was killed at its virtual-time bound of {limit_s:g} s" + (
            f" (last: {reason})" if reason else ""
        )
    return f"kernel guest: the testbed script failed (exit status {rc}): {reason or 'no message'}"
