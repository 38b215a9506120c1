"""The installed l4slab package's version (the engine's is :func:`l4slab.engine.version`).

Read from the package's ``*.dist-info/METADATA`` on ``sys.path`` directly: ``importlib.metadata``
costs a third of a second to import, which ``l4slab --version`` must not pay (< 0.5 s).
"""

from __future__ import annotations

import os
import sys

__all__ = ["PACKAGE_VERSION"]


def _installed_version(name: str = "l4slab") -> str:
    prefix = f"{name}-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for dist in names:
            if dist.startswith(prefix) and dist.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry or ".", dist, "METADATA"), encoding="utf-8") as meta:
                        for line in meta:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break
                except OSError:
                    continue
    return "0+unknown"  # running from a source tree that was never installed


PACKAGE_VERSION = _installed_version()
