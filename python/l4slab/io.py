"""Atomic file writes, and bounded reads of input files.

Each write goes to a temporary file in the destination directory, is fsynced and then
``os.replace``d over its final name, so a reader (or a crashed run) never sees a
half-written file. Used by run directories (:mod:`l4slab.rundir`), the study store
and reports.

Every file the package reads as input (a scenario or study TOML, a ``base`` file, and
each file of a study directory: ``plan.json``, ``records.jsonl``, ``failed/*.json``,
``runs/*.parquet``) goes through :func:`read_input`: it must be a regular file (a FIFO,
a device such as ``/dev/zero``, a socket or a directory is refused without reading
it: the file is opened non-blocking, so not even the open of a FIFO waits for a
writer), it must be at most a size limit of its kind (:data:`MAX_TEXT_FILE_BYTES`,
:data:`MAX_RUN_FILE_BYTES`), and it is read within :data:`READ_TIMEOUT_S` (a hung
network file system is one line, not a hang). Each refusal is one line naming the file
and what is wrong.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pandas is imported by the writer only: scenario loading stays light
    import pandas as pd

__all__ = [
    "read_input",
    "check_regular",
    "MAX_TEXT_FILE_BYTES",
    "MAX_RUN_FILE_BYTES",
    "READ_TIMEOUT_S",
    "atomic_write",
    "remove_leftovers",
    "remove_dead_temps",
    "pid_alive",
    "check_out_file",
    "write_bytes",
    "write_text",
    "write_json",
    "write_parquet",
]


#: Largest text input: a scenario, study or ``base`` TOML file, ``plan.json``,
#: ``records.jsonl``, a ``failed/*.json``: 64 MiB. The largest legitimate ones are far
#: below it (a scenario listing the most flows the engine takes, one table each, is ~2 MB; the plan of a
#: 10 000-run study ~25 MB, a records line 120 bytes a run); the bound keeps a mistaken
#: path (a log, a disk image) from being parsed into gigabytes of Python objects.
MAX_TEXT_FILE_BYTES = 64 << 20
#: Largest run file of a study (``runs/<id>.parquet``), read whole to verify its
#: checksum: 4 GiB, the largest a run's series and per-packet trace can encode
#: (the engine's memory bound, ``config.rs`` ``MAX_PREALLOC_BYTES``).
MAX_RUN_FILE_BYTES = 4 << 30
#: Seconds a read of one input file may take: 60 s (a 4 GiB run file reads in a few
#: seconds from any local disk; longer is a hung network file system).
READ_TIMEOUT_S = 60.0

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_regular(path: str | os.PathLike[str], what: str = "file") -> Path:
    """``path`` if it is a regular file (for readers that open it themselves, such as
    Parquet's); anything else is one :class:`~l4slab.errors.ScenarioError` line. A missing
    file passes (the reader says it is missing)."""
    from .errors import ScenarioError

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return Path(path)
    if not stat.S_ISREG(mode):
        raise ScenarioError(f"{path}: {_kind(mode)}, not a regular file; a {what} must be a regular file")
    return Path(path)


def read_input(
    path: str | os.PathLike[str],
    what: str,
    limit: int = MAX_TEXT_FILE_BYTES,
    *,
    error: type[Exception] | None = None,
    timeout_s: float | None = None,
) -> bytes:
    """The bytes of input file ``path`` (a ``what``: "scenario file", "run file"...).

    Refuses, with one ``error`` line (default :class:`~l4slab.errors.ScenarioError`)
    naming the file: anything but a regular file, a file larger than ``limit`` bytes,
    and a read that takes longer than ``timeout_s`` (:data:`READ_TIMEOUT_S`). A missing
    file, a directory, or one that cannot be opened, raises its ``OSError``
    (``FileNotFoundError``, ``IsADirectoryError``, ...: callers say what it means for them)."""
    from .errors import ScenarioError

    fail = error or ScenarioError
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # as open() says it: callers name what a directory is not
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(info.st_mode):
            raise fail(f"{path}: {_kind(info.st_mode)}, not a regular file; a {what} must be a regular file")
        if info.st_size > limit:
            raise fail(f"{path}: {info.st_size} bytes; a {what} may hold at most {limit} bytes")
        outcome: list[Any] = []

        def read() -> None:
            try:
                chunks, size = [], 0
                while size <= limit:
                    chunk = os.read(fd, min(1 << 24, limit + 1 - size))
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                outcome.append(b"".join(chunks))
            except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
                outcome.append(err)

        reader = threading.Thread(target=read, name="l4slab-read-input", daemon=True)
        reader.start()
        reader.join(READ_TIMEOUT_S if timeout_s is None else timeout_s)
        if not outcome:
            fd = -1  # the stuck reader still owns it; the process exit closes it
            raise fail(f"{path}: not read within {READ_TIMEOUT_S if timeout_s is None else timeout_s:g} s "
                       "(a hung file system?)")  # fmt: skip
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        data: bytes = outcome[0]
        if len(data) > limit:  # it grew while being read
            raise fail(f"{path}: more than {limit} bytes; a {what} may hold at most {limit} bytes")
        return data
    finally:
        if fd >= 0:
            os.close(fd)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable where the platform allows it (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@lru_cache(maxsize=1)
def _file_mode() -> int:
    """Permissions a plain ``open()`` would give (mkstemp creates files 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def temp_prefix(target: Path) -> str:
    """Temp files of ``target`` are ``.<name>.<pid>.<random>.tmp``: the writer's pid lets
    a later writer tell a leftover of a dead process from a live writer's file
    (:func:`remove_leftovers`)."""
    return f".{target.name}.{os.getpid()}."


def remove_leftovers(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files of ``target`` (and a sibling like DuckDB's ``.tmp.wal``) whose
    writer process is gone; return them. A name without a writer's pid is removed."""
    target = Path(target)

    def writer(leftover: Path) -> int | None:
        pid = leftover.name[len(target.name) + 2 :].split(".", 1)[0]
        return int(pid) if pid.isdigit() else None

    return _remove_dead((leftover, writer(leftover)) for leftover in target.parent.glob(f".{target.name}.*.tmp*"))


def _remove_dead(leftovers) -> list[Path]:
    """Unlink each ``(path, writer pid)`` whose writer is gone (``None``: no writer named);
    a live writer's files, this process's included, stay. Return what was removed."""
    removed = []
    for leftover, pid in leftovers:
        if pid is not None and (pid == os.getpid() or pid_alive(pid)):
            continue
        try:
            leftover.unlink()
            removed.append(leftover)
        except OSError:
            pass
    return removed


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[^.]+\.tmp(\..+)?$")


def remove_dead_temps(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove, in ``directory`` and below, every temp file of :func:`atomic_write` (and a
    sibling like ``.tmp.wal``) whose writer process is gone (a SIGKILL between the write
    and the rename); return them. A live writer's files, this process's included, stay."""
    matches = ((leftover, _TEMP_NAME.match(leftover.name)) for leftover in Path(directory).rglob(".*.tmp*"))
    return _remove_dead((leftover, int(m["pid"])) for leftover, m in matches if m is not None and leftover.is_file())


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded.

    ``write`` receives a path in the same directory (so the final rename cannot
    cross file systems). On any exception the temporary file is removed and the
    previous content of ``path``, if any, is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp_name)
    try:
        write(tmp_path)
        with open(tmp_path, "rb+") as written:
            os.fsync(written.fileno())
        os.chmod(tmp_path, _file_mode())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    _fsync_directory(target.parent)
    return target


def check_out_file(path: str | os.PathLike[str], flag: str) -> Path:
    """Refuse, before anything runs, an output file that cannot be one (an empty name, a
    directory, a place under a file): a one-line :class:`~l4slab.errors.ScenarioError`
    naming ``flag`` (exit 2)."""
    from .errors import ScenarioError

    if str(path) == "":
        raise ScenarioError(f"{flag}: an empty path is not a file name")
    if "\0" in str(path):
        raise ScenarioError(f"{flag}: the path holds a NUL character")
    target = Path(path)
    if target.is_dir():
        raise ScenarioError(f"{flag}: {path} is a directory, not a file")
    parent = target.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ScenarioError(f"{flag}: {path} cannot be created: {parent} is a file, not a directory")
    return target


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Strict JSON (NaN is refused: callers convert it to null), 2-space indented."""
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_parquet(path: str | os.PathLike[str], frame: "pd.DataFrame") -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))
