"""Exceptions the front end raises for user mistakes.

Every message is a single line that names the offending field, the value, and
what would have been accepted, so the CLI can print it as ``l4slab: error: ...``.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario (file, dict or override) is invalid; the message is one line."""

    def __init__(self, message: str) -> None:
        # Collapse accidental newlines so the one-line guarantee holds for every caller.
        # An echoed value of thousands of characters is cut (a path is kept whole).
        words = [
            w if len(w) <= 120 or ("/" in w and len(w) <= 1000) else f"{w[:77]}...({len(w)} characters)"
            for w in str(message).split()
        ]
        super().__init__(" ".join(words))


class EngineUnavailableError(ImportError):
    """The compiled engine ``l4slab._core`` is not importable (package not built)."""


class EngineError(RuntimeError):
    """The engine rejected a resolved config or failed during a run (one line)."""
