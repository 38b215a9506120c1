"""The installed l4slab package's version (the engine's is :func:`l4slab.engine.version`)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["PACKAGE_VERSION"]

try:
    PACKAGE_VERSION = metadata.version("l4slab")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    PACKAGE_VERSION = "0+unknown"
