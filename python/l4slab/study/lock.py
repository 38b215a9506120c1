"""One writer per study directory: an exclusive ``flock`` on ``DIR/.lock``.

``study run`` (and planning, which rewrites ``plan.json``) holds the lock for its whole
life; a second ``study run`` on the same directory fails at once with one line naming
the holder's pid (exit 2) instead of re-running what the first is running. The kernel releases an ``flock`` when the holder dies, so a killed run never
leaves a stale lock; the pid written into the file is only for the message. Readers
(``status``, ``query``, ``report``) and ``run-one`` (job arrays run many at once) take
no lock: run files are placed by atomic rename, so they see complete files or none.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from ..errors import ScenarioError

__all__ = ["study_lock", "LOCK_FILE", "held_fd"]

LOCK_FILE = ".lock"

#: The lock's descriptor while this process holds one (workers forked meanwhile close
#: their inherited copy, :func:`l4slab.study.executors.worker_init`).
_held: list[int] = []


def held_fd() -> int | None:
    return _held[-1] if _held else None


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        return "another process"
    return f"pid {text}" if text.isdigit() else "another process"


@contextlib.contextmanager
def study_lock(directory: Path) -> Iterator[Path]:
    """Hold the exclusive lock of ``directory`` (created if needed) for the block."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ScenarioError(
                f"{directory}: another `l4slab study run` ({_holder(fd)}) is using this study directory; "
                "wait for it to end or stop it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held.append(fd)
        try:
            yield path
        finally:
            _held.remove(fd)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)
