"""A user's own kernel inputs: congestion controls (``tcp_NAME.c``) and patches.

A scenario names them in its ``[kernel]`` table (``cc_sources``, ``patches``; paths relative
to the scenario file); ``l4slab kernel build --cc-source`` takes the same files. This module
reads and checks them without building anything, so the scenario loader can accept the
congestion controls a scenario registers (``flows.cc = "mycc"``) and the resolved config can
carry each file's content hash (a study's run id changes with the file). Every problem is a
:class:`SourceError` (a ``ValueError``) whose message is one line naming the file.

Rules (docs/kernel.md, "Bring your own congestion control"):

* a congestion control is a C file named ``tcp_NAME.c`` (letters, digits, ``_``) that
  defines at least one ``struct tcp_congestion_ops`` with a literal ``.name = "..."``
  (1-15 characters of letters, digits, ``_`` and ``-``: ``TCP_CA_NAME_MAX``); it must not
  take the name of a kernel or project file (``tcp_cubic.c``, ``tcp_l4slab_prague.c``, ...)
  nor register a name the kernel already has (``cubic``, ``prague``, ...) or one the engine
  knows (``bbr3``: a flow's ``cc`` names one or the other, never both);
* a patch is a unified diff applied with ``patch -p1`` to the kernel tree (after the
  project's own patches); it may change C sources and headers, not ``Kconfig`` or
  ``Makefile`` files (the build's configuration is the project's), and its paths stay inside
  the tree.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

__all__ = [
    "SourceError",
    "CcSource",
    "Patch",
    "read_cc_source",
    "read_patch",
    "registered_names",
    "KERNEL_CC_NAMES",
    "MAX_FILE_BYTES",
]

#: Project files: the kernel backend's own congestion controls.
PROJECT_NET = Path(__file__).resolve().parent / "linux" / "net"
#: The guest's kernel configuration fragment (its CONFIG_TCP_CONG_* are mainline's CCs).
CONFIG_FRAGMENT = Path(__file__).resolve().parent / "linux" / "l4slab.config"
#: Kernel files a user's file must not replace (net/ipv4/ of the tree).
RESERVED_FILES = frozenset(
    {"tcp.c", "tcp_cong.c", "tcp_input.c", "tcp_output.c", "tcp_ipv4.c", "tcp_timer.c", "tcp_cubic.c",
     "tcp_dctcp.c", "tcp_bbr.c", "tcp_minisocks.c", "tcp_metrics.c", "tcp_rate.c", "tcp_recovery.c",
     "tcp_offload.c", "tcp_fastopen.c", "tcp_ulp.c", "tcp_diag.c", "tcp_plb.c", "tcp_sigpool.c", "tcp_ao.c"}
)  # fmt: skip
#: Largest file read (a CC or a patch): a mistake past it, not a source.
MAX_FILE_BYTES = 4 << 20
_FILE_NAME = re.compile(r"tcp_[A-Za-z0-9_]{1,60}\.c")
_CC_NAME = re.compile(r"[A-Za-z0-9_-]{1,15}")
_OPS = re.compile(r"\bstruct\s+tcp_congestion_ops\s+[A-Za-z_]\w*[^;={(]*=\s*\{")
_NAME_FIELD = re.compile(r"\.name\s*=\s*\"([^\"\n]*)\"")


class SourceError(ValueError):
    """A user's kernel file that cannot be used (one line naming it)."""


@dataclass(frozen=True)
class CcSource:
    """A user's congestion-control file: its path, content hash and registered names."""

    path: Path
    sha256: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Patch:
    """A user's kernel patch: its path, content hash and the tree files it changes."""

    path: Path
    sha256: str
    files: tuple[str, ...]


def _read(path: Path, what: str) -> bytes:
    try:
        if not path.is_file():
            raise SourceError(f"{str(path)!r} is not a file")
        data = path.read_bytes()
    except OSError as err:
        raise SourceError(f"{str(path)!r}: cannot read the {what}: {err.strerror or err}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SourceError(f"{path.name}: {len(data)} bytes; a {what} of at most {MAX_FILE_BYTES >> 20} MiB")
    return data


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def registered_names(text: str) -> list[str]:
    """The ``.name`` of every ``struct tcp_congestion_ops`` initialiser in C ``text``."""
    code = _strip_comments(text)
    names: list[str] = []
    for match in _OPS.finditer(code):
        depth, pos = 1, match.end()
        while depth and pos < len(code):
            depth += {"{": 1, "}": -1}.get(code[pos], 0)
            pos += 1
        field = _NAME_FIELD.search(code, match.end(), pos)
        if field is not None:
            names.append(field.group(1))
    return names


def _project_names() -> frozenset[str]:
    names: set[str] = set()
    for path in sorted(PROJECT_NET.glob("*.c")):
        names.update(registered_names(path.read_text(errors="replace")))
    return frozenset(names)


def _mainline_names() -> frozenset[str]:
    """Mainline's congestion controls in the guest: Reno (tcp_cong.c, always) and each
    ``CONFIG_TCP_CONG_<NAME>=y`` of the configuration fragment, with the ``-reno`` fallback
    some of them switch to."""
    text = CONFIG_FRAGMENT.read_text(errors="replace") if CONFIG_FRAGMENT.exists() else ""
    names = {m.lower() for m in re.findall(r"^CONFIG_TCP_CONG_(\w+)=y", text, re.M) if m != "ADVANCED"}
    return frozenset({"reno", *names, *(f"{n}-reno" for n in names)})


def kernel_cc_names() -> frozenset[str]:
    """Names the guest kernel registers without a user's file (mainline's and the project's)."""
    return _mainline_names() | _project_names()


KERNEL_CC_NAMES = kernel_cc_names()


def read_cc_source(path: str | Path, engine_names: Iterable[str] = ()) -> CcSource:
    """Check a user's ``tcp_NAME.c`` and read what it registers; :class:`SourceError` else."""
    path = Path(path).expanduser()
    if not _FILE_NAME.fullmatch(path.name):
        raise SourceError(f"{path.name!r} is not named tcp_NAME.c (NAME: letters, digits, _)")
    if path.name in RESERVED_FILES or (PROJECT_NET / path.name).exists():
        raise SourceError(f"{path.name} would replace a file of the kernel or the project; rename it")
    data = _read(path, "congestion control")
    names = registered_names(data.decode("utf-8", errors="replace"))
    if not names:
        raise SourceError(
            f'{path.name} registers no tcp_congestion_ops (no struct tcp_congestion_ops with a .name = "...")'
        )
    engine = set(engine_names)
    for name in names:
        if not _CC_NAME.fullmatch(name):
            raise SourceError(f"{path.name}: .name = {name!r}: allowed 1-15 letters, digits, '_' or '-'")
        if name in KERNEL_CC_NAMES:
            raise SourceError(
                f"{path.name}: .name = {name!r} is a congestion control the kernel already has; rename it"
            )
        if name in engine:
            raise SourceError(
                f"{path.name}: .name = {name!r} is a congestion control of the engine; give yours another name"
            )
    if len(set(names)) != len(names):
        raise SourceError(f"{path.name}: registers {names[0]!r} twice")
    return CcSource(path.resolve(), hashlib.sha256(data).hexdigest(), tuple(names))


_DIFF_TARGET = re.compile(r"^\+\+\+ (\S+)", re.M)


def read_patch(path: str | Path) -> Patch:
    """Check a user's kernel patch (a unified diff for ``patch -p1``); :class:`SourceError` else."""
    path = Path(path).expanduser()
    data = _read(path, "patch")
    text = data.decode("utf-8", errors="replace")
    targets = _DIFF_TARGET.findall(text)
    if not targets or not re.search(r"^--- ", text, re.M) or not re.search(r"^@@ ", text, re.M):
        raise SourceError(f"{path.name} is not a unified diff (no ---/+++/@@ lines)")
    files: list[str] = []
    for target in targets:
        if target == "/dev/null":
            continue
        parts = target.split("/", 1)
        rel = parts[1] if len(parts) == 2 else ""
        if not rel or target.startswith("/") or ".." in Path(rel).parts:
            raise SourceError(
                f"{path.name}: {target!r} is not a path inside the kernel tree (patch -p1: a/FILE, b/FILE)"
            )
        name = Path(rel).name
        if name.startswith("Kconfig") or name in ("Makefile", "Kbuild") or rel.startswith(("scripts/", ".config")):
            raise SourceError(
                f"{path.name}: changes {rel}; a patch may change C sources and headers, not the build's "
                "Kconfig or Makefiles (add a congestion control with kernel.cc_sources)"
            )
        files.append(rel)
    return Patch(path.resolve(), hashlib.sha256(data).hexdigest(), tuple(dict.fromkeys(files)))
