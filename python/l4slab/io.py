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

__all__ = ["atomic_write", "write_bytes", "write_text", "write_json", "write_parquet"]


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


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded.

    ``write`` receives a path in the same directory (so the final rename cannot
    cross file systems). On any exception the temporary file is removed and the
    previous content of ``path``, if any, is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
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


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Strict JSON (NaN is refused: callers convert it to null), 2-space indented."""
    return write_text(path, json.dumps(data, indent=2, allow_nan=False) + "\n")


def write_parquet(path: str | os.PathLike[str], frame: pd.DataFrame) -> Path:
    return atomic_write(path, lambda tmp: frame.to_parquet(tmp, engine="pyarrow", index=False))
