"""Boot the kernel backend's guest once: a User-Mode Linux (UML) kernel in virtual time.

UML (``ARCH=um``) is the Linux kernel built as an ordinary host program: no KVM, no QEMU,
no root file system but the initramfs. With ``time-travel=inf-cpu`` the guest's clock
advances only while the guest is idle, so the guest behaves as on an infinitely fast
machine: what the kernel does does not depend on how fast or busy the host is, only the
wall time does (``arch/um/kernel/time.c``; Documentation/virt/uml/user_mode_linux_howto_v2.rst).

One boot: the host run directory is mounted in the guest at ``/l4slab`` (hostfs), the
guest's ``/init`` (``guest/init``) runs ``/l4slab/guest.sh`` under a virtual-time bound,
writes ``guest.rc`` and powers off.

Repeatable: given a ``seed``, a boot's randomness is a function of it alone, so the same
script and seed give the same guest, bit for bit. The kernel seeds its random pool from
the host (``os_getrandom``, UML's hwrng driver), the wall clock and its command line; the
project's kernel draws the first from ``random-seed=`` (``0005-um-seeded-random.patch``)
and leaves the driver out (``CONFIG_UML_RANDOM=n``), the clock starts at
:data:`GUEST_EPOCH_NS` (``time-travel-start``), and the command line holds no host path:
UML runs in a private directory holding ``run`` (a link to the run directory) and
``initramfs.cpio``, and the guest mounts ``/proc/self/cwd/run/.`` (hostfs resolves host
paths in the UML process). Without a seed the host's randomness is used, as a stock UML.

The guest has no network device: the testbed's links are veth pairs between namespaces
that ``guest.sh`` creates, so nothing it sends can leave the guest.

Bounds: the guest script is killed inside the guest after ``limit_s`` virtual seconds; the
whole UML process group is killed after ``wall_limit_s`` host seconds. Either way the call
returns or raises within the wall bound, and leaves no process and no temporary directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import EngineError

__all__ = ["GuestFailed", "GuestRun", "boot", "default_wall_limit"]

#: Guest memory: the testbed (a few namespaces, iperf3, socket buffers of a few MB per
#: flow) fits in a fraction of it; UML maps it from a host temporary file it unlinks at once.
DEFAULT_MEM = "512M"
#: Longest virtual-time bound a caller may ask for (a day); longer is a mistake.
MAX_LIMIT_S = 86_400
#: The guest's wall clock at boot (``time-travel-start``): 2026-01-01 00:00:00 UTC, so no
#: boot reads the host's clock. Nothing in a run depends on the date.
GUEST_EPOCH_NS = 1_767_225_600 * 10**9


class GuestFailed(EngineError):
    """The guest hung, crashed or ended without running its script (one line)."""


@dataclass(frozen=True)
class GuestRun:
    """One finished boot."""

    #: Exit status of ``guest.sh`` inside the guest (137: killed at the virtual-time bound).
    rc: int
    #: Host wall time of the boot, s.
    wall_s: float
    #: ``guest.sh``'s standard output and error.
    log: str
    #: ``uname -r`` inside the guest.
    release: str


def default_wall_limit(limit_s: float) -> float:
    """Host wall bound for a guest whose script has ``limit_s`` virtual seconds.

    Virtual time runs ahead of or behind the wall clock depending on the traffic: a
    saturated 100 Mbit/s testbed ran at about 0.4x real time on two host cores
    (kernel-testbed proof of concept), idle stretches at many times real time. The bound
    leaves room for a slow, loaded host; a guest that exceeds it is stuck.
    """
    return 120.0 + 6.0 * float(limit_s)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the guest's process group (UML runs its guest processes as host children)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
        pass
    # UML's helper processes share the group; reap any that outlived the main one.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _group_alive(proc.pid):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            break
        time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'.
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def boot(
    kernel,
    run_dir: str | os.PathLike[str],
    script: str,
    *,
    limit_s: float,
    wall_limit_s: float | None = None,
    mem: str = DEFAULT_MEM,
    seed: int | None = None,
) -> GuestRun:
    """Run ``script`` as ``/l4slab/guest.sh`` in a fresh guest of ``kernel`` (a
    :class:`~l4slab.kernel.build.Kernel`); ``run_dir`` is the guest's ``/l4slab``;
    ``seed`` (0..2^64-1) makes the guest's randomness its function (module docstring).

    Raises :class:`GuestFailed` (one line) when the guest exceeds its wall bound, crashes,
    or ends without ``guest.rc``; the caller decides what a non-zero ``rc`` means.
    """
    if not (0 < float(limit_s) <= MAX_LIMIT_S):
        raise GuestFailed(f"guest limit_s: {limit_s!r} is not within (0, {MAX_LIMIT_S}] s")
    wall = default_wall_limit(limit_s) if wall_limit_s is None else float(wall_limit_s)
    if not wall > 0:
        raise GuestFailed(f"guest wall_limit_s: {wall_limit_s!r} is not a positive number of seconds")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise GuestFailed(f"guest seed: {seed!r} is not an integer in 0..2^64-1")
    directory = Path(run_dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    for stale in ("guest.rc", "guest.log", "guest.uname", "dmesg.txt"):
        (directory / stale).unlink(missing_ok=True)
    (directory / "guest.sh").write_text(script)

    # Every argument after the binary is the kernel's command line, which it mixes into its
    # random pool: no host path and nothing of the host's in it (module docstring).
    cmd = [
        str(Path(kernel.linux).resolve()),
        f"mem={mem}",
        "initrd=initramfs.cpio",
        "con=null",
        "con0=null,fd:1",
        "umid=guest",
        "uml_dir=.",
        "time-travel=inf-cpu",
        f"time-travel-start={GUEST_EPOCH_NS}",
        *([] if seed is None else [f"random-seed={seed}"]),
        # Guest processes talk to the UML kernel through a seccomp filter instead of ptrace:
        # fewer host context switches per system call and page fault (6.2 s instead of 9.9 s
        # of wall time for 10 s of two Prague flows at 100 Mbit/s). Only the project's own
        # initramfs runs in the guest, the trusted user space this mode asks for
        # (arch/um/os-Linux/start_up.c:uml_seccomp_config); `auto` falls back to ptrace.
        "seccomp=auto",
        "quiet",
        "loglevel=3",
        "panic=-1",
        # The testbed is IPv4 only: its receivers then listen on IPv4 sockets, which the
        # probe's sock_diag dump (AF_INET) sees.
        "ipv6.disable=1",
        "l4slab.dir=/proc/self/cwd/run/.",
        f"l4slab.limit={max(1, int(limit_s))}",
    ]
    t0 = time.monotonic()
    proc = None
    # UML maps the guest's memory from a file in $TMPDIR: on tmpfs it stays in RAM. Made
    # last before the try that removes it, so nothing before can leave it behind.
    shm = Path("/dev/shm")
    uml_dir = Path(tempfile.mkdtemp(prefix="l4slab-uml-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    try:
        (uml_dir / "run").symlink_to(directory, target_is_directory=True)
        (uml_dir / "initramfs.cpio").symlink_to(Path(kernel.initramfs).resolve())
        env = dict(os.environ, TMPDIR=str(uml_dir))
        with open(directory / "console.log", "wb") as console:
            proc = subprocess.Popen(
                cmd,
                cwd=uml_dir,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
            try:
                proc.wait(timeout=wall)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise GuestFailed(
                    f"guest: no result within its wall bound of {wall:.0f} s (virtual limit {limit_s:g} s); killed"
                ) from None
            except BaseException:
                _kill_group(proc)
                raise
        _kill_group(proc)  # helpers left behind by a guest that exited (none expected)
    finally:
        shutil.rmtree(uml_dir, ignore_errors=True)
    wall_s = time.monotonic() - t0
    rc_file = directory / "guest.rc"
    if not rc_file.exists():
        tail = _last_line(directory / "console.log")
        raise GuestFailed(
            f"guest: ended after {wall_s:.1f} s without running its script (host exit status {proc.returncode}"
            f"{'; console: ' + tail if tail else ''})"
        )
    try:
        rc = int(rc_file.read_text().strip() or "-1")
    except ValueError:
        rc = -1
    log = (directory / "guest.log").read_text(errors="replace") if (directory / "guest.log").exists() else ""
    release = (directory / "guest.uname").read_text().strip() if (directory / "guest.uname").exists() else ""
    return GuestRun(rc=rc, wall_s=wall_s, log=log, release=release)


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""
