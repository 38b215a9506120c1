"""A package's public names imported on first use (PEP 562 module ``__getattr__``).

``l4slab`` and ``l4slab.study`` keep their heavy modules (pandas, DuckDB, matplotlib, the
engine) out of commands that answer at once (``--version``, ``--help``, ``study list``):
each declares which module defines each name and gets its ``__getattr__``/``__dir__`` here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any


def attach(
    package: str, names: Mapping[str, str], *, submodules: bool = False
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair for ``package``: a name in ``names`` is imported
    from its module (relative to the package) on first use and kept in the package; with
    ``submodules``, any other public name that is a submodule is imported too (so
    ``l4slab.study`` works after a bare ``import l4slab``)."""

    def __getattr__(name: str) -> Any:
        namespace = vars(sys.modules[package])
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
            namespace[name] = value
            return value
        if submodules and not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
