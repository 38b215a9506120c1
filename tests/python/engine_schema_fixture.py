"""FIXTURE: a hand-written engine schema (``fixtures/schema.json``) for an engine built
before ``l4slab._core.schema()`` existed. Tests only: the package always asks the engine.

:func:`install` replaces :func:`l4slab.engine.schema_json` in this process (and in the
processes it forks) when the compiled engine has no ``schema()``; with a current engine
it does nothing. ``python tests/python/engine_schema_fixture.py ARGS`` runs the
``l4slab`` command with the fixture installed (for tests that start a new process), and
Dask workers preloading this module install it too.
"""

from __future__ import annotations

import sys
from pathlib import Path

FIXTURE = Path(__file__).with_name("fixtures") / "schema.json"


def engine_has_schema() -> bool:
    try:
        from l4slab import _core
    except ImportError:
        return False
    return hasattr(_core, "schema")


def install() -> None:
    import l4slab.engine

    if not engine_has_schema():
        l4slab.engine.schema_json = FIXTURE.read_text


def dask_setup(worker) -> None:
    """Dask worker preload hook (``LocalCluster(preload=["engine_schema_fixture"])``)."""
    install()


def command(*args: str) -> list[str]:
    """The argv that runs ``l4slab ARGS`` in a new process with the fixture installed."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


if __name__ == "__main__":
    install()
    from l4slab.cli import main

    sys.exit(main())
