"""A newc ("new ASCII") cpio archive writer for the guest's initramfs.

The format is the kernel's (Documentation/driver-api/early-userspace/buffer-format.rst):
per entry a 110-byte ASCII header (magic ``070701`` and thirteen 8-digit hex fields), the
NUL-terminated name padded to 4 bytes, the data padded to 4 bytes; ``TRAILER!!!`` ends
it. Written here rather than by ``cpio -o`` so the image is the same bytes for the same
inputs (fixed owner, times and inode numbers) and the build needs one host tool fewer.
"""

from __future__ import annotations

import stat
from pathlib import Path

__all__ = ["Image"]

_MAGIC = b"070701"


class Image:
    """Entries in insertion order; parents are created as directories when missing."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[int, bytes]] = {}

    def _parents(self, name: str) -> None:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/".join(parts[:i])
            if parent and parent not in self._entries:
                self._entries[parent] = (stat.S_IFDIR | 0o755, b"")

    def _add(self, name: str, mode: int, data: bytes, exist_ok: bool) -> None:
        name = name.strip("/")
        if not name or ".." in name.split("/"):
            raise ValueError(f"initramfs entry name {name!r} is not a relative path")
        if name in self._entries:
            if exist_ok:
                return
            raise ValueError(f"initramfs entry {name!r} added twice")
        self._parents(name)
        self._entries[name] = (mode, data)

    def dir(self, name: str, mode: int = 0o755) -> None:
        self._add(name, stat.S_IFDIR | mode, b"", exist_ok=True)

    def file(self, name: str, data: bytes, mode: int = 0o644, *, exist_ok: bool = False) -> None:
        self._add(name, stat.S_IFREG | mode, bytes(data), exist_ok)

    def symlink(self, name: str, target: str) -> None:
        self._add(name, stat.S_IFLNK | 0o777, target.encode(), exist_ok=False)

    def names(self) -> list[str]:
        return list(self._entries)

    def write(self, path: Path) -> None:
        with open(path, "wb") as out:
            ino = 1
            for name, (mode, data) in self._entries.items():
                ino += 1
                _entry(out, name, mode, data, ino, nlink=2 if stat.S_ISDIR(mode) else 1)
            _entry(out, "TRAILER!!!", 0, b"", 0, nlink=1)


def _entry(out, name: str, mode: int, data: bytes, ino: int, nlink: int) -> None:
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
    header = _MAGIC + b"".join(f"{value:08x}".encode() for value in fields)
    out.write(header)
    out.write(encoded)
    out.write(b"\0" * (-(len(header) + len(encoded)) % 4))
    out.write(data)
    out.write(b"\0" * (-len(data) % 4))
