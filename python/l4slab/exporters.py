"""The formats ``l4slab export`` writes, found by name, as flent finds its formatters
(``flent/formatters.py``: one class per output format, looked up by the name given with
``-f``). Each :class:`Exporter` names the function that writes it as ``"module:function"``,
imported only when that format is written, so building the CLI imports no data stack.

Adding a format: a function ``write(run_dir, output) -> Path | list[Path]`` and one
:func:`register` call (here for the built-in ones, or from any module imported before
the CLI is built); ``l4slab export --NAME`` then reaches it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import ScenarioError

__all__ = ["Exporter", "EXPORTERS", "register", "exporter"]


@dataclass(frozen=True)
class Exporter:
    """One export format."""

    #: The name (``l4slab export --NAME``).
    name: str
    #: One line for ``--help``.
    help: str
    #: The writer, ``"module:function"``, called as ``function(run_dir, output)`` with
    #: ``output`` None for the format's default place; returns the path(s) written.
    target: str
    #: ``--output`` names a directory (else a file, whose directory must be writable).
    output_is_dir: bool

    def load(self) -> Callable[..., Path | list[Path]]:
        module, _, function = self.target.partition(":")
        return getattr(importlib.import_module(module), function)

    def write(self, run_dir: str | Path, output: str | Path | None = None) -> list[Path]:
        """Write ``run_dir`` in this format; the paths written."""
        written = self.load()(run_dir, output)
        return [written] if isinstance(written, Path) else list(written)


#: The registered formats by name, in registration order.
EXPORTERS: dict[str, Exporter] = {}


def register(e: Exporter) -> Exporter:
    """Register ``e`` under its name (a name registered twice is a programming error)."""
    if e.name in EXPORTERS:
        raise ValueError(f"export format {e.name!r} is already registered")
    if not e.name.replace("-", "").isalnum() or ":" not in e.target:
        raise ValueError(f"export format {e.name!r}: a name of letters, digits and '-', and a 'module:function'")
    EXPORTERS[e.name] = e
    return e


def exporter(name: str) -> Exporter:
    """The format registered as ``name``; an unknown name is one line listing the known ones."""
    try:
        return EXPORTERS[name]
    except KeyError:
        raise ScenarioError(f"export format {name!r} is unknown (known: {', '.join(EXPORTERS)})") from None


register(
    Exporter(
        "flent",
        "write RUN_DIR/<name>.flent.gz (needs PyPI flent)",
        "l4slab.export:to_flent",
        output_is_dir=False,
    )
)
register(
    Exporter(
        "iperf3-json",
        "write RUN_DIR/iperf3-flow<N>.json per TCP flow",
        "l4slab.export:to_iperf3_json",
        output_is_dir=True,
    )
)
