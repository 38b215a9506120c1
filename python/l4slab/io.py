"""Atomic file writes: a file either keeps its old content or holds the complete new one.

Each write goes to a temporary file in the destination directory, is fsynced and then
``os.replace``d over its final name, so a reader (or a crashed run) never sees a
half-written file. Used by run directories (:mod:`l4slab.rundir`), the study store
and reports.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pandas as pd

__all__ = [
    "atomic_write",
    "remove_leftovers",
    "check_out_file",
    "write_bytes",
    "write_text",
    "write_json",
    "write_parquet",
]


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
    writer process is gone; return them."""
    target = Path(target)
    removed = []
    for leftover in target.parent.glob(f".{target.name}.*.tmp*"):
        pid = leftover.name[len(target.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
                continue  # a live writer's file
            except ProcessLookupError:
                pass
            except OSError:
                continue
        elif pid.isdigit():
            continue  # ours: removed by the writer itself
        try:
            leftover.unlink()
            removed.append(leftover)
        except OSError:
            pass
    return removed


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


def write_parquet(path: str | os.PathLike[str], frame: pd.DataFrame) -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))
