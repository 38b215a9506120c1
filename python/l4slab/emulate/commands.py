"""Command flows (the user's own sender and receiver in the emulator) and the cleanup of
what a dead run left behind.

A command flow is a scenario flow with a ``command`` table (:class:`l4slab.scenario.model.
FlowCommand`): its commands run in the flow's namespaces instead of iperf3 (TCP) or the
emulator's own UDP source, and its results come from the bottleneck's own view of its
packets (``emu_meta.json`` ``flows``), whatever the protocol. The flow's other fields are
the simulated counterpart that ``l4slab run`` and ``l4slab compare`` use.

**Priority.** The forwarding loop runs in ``SCHED_FIFO`` (``crates/l4slab-emu/src/clock.rs``);
a user program that raises itself to a real-time priority at or above it (L4STeam's
``udp_prague`` does as root) takes the CPU from the loop and the emulated link stops. The
commands are therefore started without ``CAP_SYS_NICE`` (dropped from the capability
bounding set, ``prctl(PR_CAPBSET_DROP)``, so the exec'd program never has it) and with
``RLIMIT_RTPRIO`` 0: ``sched_setscheduler(SCHED_FIFO/RR)`` fails with ``EPERM``
(kernel/sched/core.c ``__sched_setscheduler`` → ``user_check_sched_setscheduler``), and the
program runs at normal priority.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import shlex
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from ..errors import ScenarioError

__all__ = [
    "WORK_PREFIX",
    "command_flows",
    "command_words",
    "drop_realtime",
    "work_dir_for",
    "stale_work_dirs",
    "cleanup",
    "collect_outputs",
]

#: Temporary work directories: ``l4slab-emu-{pid}-XXXX`` in the system's temp directory,
#: the pid of the front end that made it (removed by the next run or ``l4slab cleanup``
#: once that process is gone).
WORK_PREFIX = "l4slab-emu-"
_WORK_RE = re.compile(r"^l4slab-emu-(\d+)-")
#: capability.h: CAP_SYS_NICE; prctl.h: PR_CAPBSET_DROP.
CAP_SYS_NICE = 23
PR_CAPBSET_DROP = 24
#: What a command's outputs may hold to be kept in the run directory (bytes, all flows).
MAX_KEPT_BYTES = 64 * 1024 * 1024


def command_flows(scenario: Any) -> dict[int, Any]:
    """Engine flow id → the :class:`FlowCommand` of every command flow (``count`` expanded)."""
    return {fid: flow.command for fid, (_, flow) in enumerate(scenario.expanded_flows()) if flow.command is not None}


def command_words(template: str, fields: Mapping[str, Any]) -> list[str]:
    """The argv of one command: the template split as a shell would, each word formatted."""
    try:
        return [word.format(**fields) for word in shlex.split(template)]
    except (KeyError, IndexError, ValueError) as err:  # checked at validation; a guard
        raise ScenarioError(f"command: {template!r}: {err}") from None


def drop_realtime() -> None:
    """``preexec_fn`` of a command: no real-time priority for it or anything it runs
    (see the module docstring)."""
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0)


def work_dir_for(pid: int | None = None) -> Path:
    """A new work directory named for the front end's pid."""
    return Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid() if pid is None else pid}-"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_work_dirs(root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Work directories whose front end is gone."""
    base = Path(root or tempfile.gettempdir())
    out = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    for entry in entries:
        match = _WORK_RE.match(entry.name)
        if match and entry.is_dir() and not _alive(int(match.group(1))):
            out.append(entry)
    return sorted(out)


def _owner_pids(prefix: str) -> set[int]:
    """Pids named in the namespaces ``{prefix}-{pid}-...`` (the binaries that own them)."""
    pids = set()
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return pids
    pattern = re.compile(rf"^{re.escape(prefix)}-(\d+)-.+")
    for name in names:
        match = pattern.match(name)
        if match:
            pids.add(int(match.group(1)))
    return pids


def _orphaned(pid: int) -> bool:
    """Whether ``pid`` was left by its parent (reparented to init)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1]) == 1
    except (OSError, ValueError):
        return False
    return False


def cleanup(binary: list[str] | None, prefix: str, *, wait_s: float = 5.0) -> dict[str, int]:
    """Remove what dead runs left: an emulator whose front end died is stopped (it ends
    on its parent's death by itself, ``PR_SET_PDEATHSIG``; an orphan still running is sent
    SIGTERM, then SIGKILL after ``wait_s``), then ``l4slab-emu cleanup`` deletes the
    namespaces of dead owners with every process inside them (an ``iperf3 -s``, a user's
    command), then the work directories of dead front ends go. Returns the counts."""
    stopped = 0
    for pid in sorted(_owner_pids(prefix)):
        if _alive(pid) and _orphaned(pid):
            stopped += 1
            for sig, wait in ((signal.SIGTERM, wait_s), (signal.SIGKILL, 2.0)):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + wait
                while _alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.02)
                if not _alive(pid):
                    break
    namespaces = 0
    if binary is not None:
        try:
            done = subprocess.run(
                [*binary, "cleanup", "--prefix", prefix], capture_output=True, text=True, timeout=30.0, check=False
            )
            namespaces = int((done.stdout.strip().splitlines() or ["0"])[-1])
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
    dirs = 0
    for path in stale_work_dirs():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
        dirs += not path.exists()
    return {"emulators_stopped": stopped, "namespaces": namespaces, "work_dirs": dirs}


def collect_outputs(directory: Path) -> dict[str, bytes]:
    """Every file under a command flow's directory (its ``{out_dir}`` and its logs), by
    relative path, up to :data:`MAX_KEPT_BYTES` in all (the rest is named in
    ``TRUNCATED.txt``)."""
    files: dict[str, bytes] = {}
    total = 0
    skipped: list[str] = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        rel = str(path.relative_to(directory))
        size = path.stat().st_size
        if total + size > MAX_KEPT_BYTES:
            skipped.append(f"{rel} ({size} B)")
            continue
        files[rel] = path.read_bytes()
        total += size
    if skipped:
        files["TRUNCATED.txt"] = ("not kept (over 64 MiB in all):\n" + "\n".join(skipped) + "\n").encode()
    return files
