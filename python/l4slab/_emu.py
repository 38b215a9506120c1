"""The emulator shipped in the extension: ``python -m l4slab._emu run|cleanup ...`` is
``l4slab-emu run|cleanup ...`` (the process protocol of docs/emulator.md), run by
``l4slab._core.emu_main`` (through ``engine.emulator_main``) in this process. ``l4slab emulate`` uses it when no
``l4slab-emu`` binary is found (``$L4SLAB_EMU``, the source tree's ``target/release``,
``PATH``): what ``pip install`` installs works with no cargo step."""

from __future__ import annotations

import sys


def main() -> int:
    from .engine import emulator_main

    return emulator_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
