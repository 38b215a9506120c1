"""The project's UDP-Prague program shipped in the extension: ``python -m l4slab._udp_prague
send|recv ...`` and the ``l4slab-udp-prague`` console script are ``l4slab-udp-prague send|recv
...`` (docs/udp-prague.md), run by ``l4slab._core.udp_prague_main`` in this process, so a
command flow's worked example (docs/emulator-commands.md) runs after ``pip install`` with no
cargo step."""

from __future__ import annotations

import sys


def main() -> int:
    from .engine import udp_prague_main

    return udp_prague_main(sys.argv[1:])


def console() -> None:
    """The ``l4slab-udp-prague`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
