"""Exceptions the front end raises for user mistakes.

Every message is a single line that names the offending field, the value, and
what would have been accepted, so the CLI can print it as ``l4slab: error: ...``.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario (file, dict or override) is invalid; the message is one line."""

    def __init__(self, message: str) -> None:
        # Collapse accidental newlines so the one-line guarantee holds for every caller.
        super().__init__(" ".join(str(message).split()))


class EngineUnavailableError(ImportError):
    """The compiled engine ``l4slab._core`` is not importable (package not built)."""


class EngineError(RuntimeError):
    """The engine rejected a resolved config or failed during a run (one line)."""
