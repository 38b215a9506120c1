"""The documentation names only repository paths that exist: every backticked path under a
top-level folder of the repository (``python/l4slab/...``, ``crates/...``, ``docs/...``,
``examples/...``, ``tests/...``) or inside the package (``l4slab/...``) in README.md and
docs/*.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: Where a documented path may start, and the repository folder it is relative to.
ROOTS = {"python": "", "crates": "", "docs": "", "examples": "", "tests": "", ".ci": "", "l4slab": "python/"}
#: A path component standing for any name: ``<name>``, ``NAME``, ``foo.rs`` (a module to add).
PLACEHOLDER = re.compile(r"^(<[^>]+>|[A-Z][A-Z_]*|foo(\.\w+)?)$")


def documented_paths(text: str) -> list[str]:
    """Backticked repository paths of a Markdown text (``path``, ``path:line`` or ``path#anchor``)."""
    found = []
    for token in re.findall(r"`([^`\s]+)`", text):
        path = re.split(r"[#:]", token, maxsplit=1)[0]
        if "/" in path and path.split("/", 1)[0] in ROOTS:
            found.append(path)
    return found


def missing(path: str) -> bool:
    """``path`` does not exist (up to its first placeholder component, which stands for any name)."""
    parts = path.rstrip("/").split("/")
    fixed = next((i for i, part in enumerate(parts) if PLACEHOLDER.match(part)), len(parts))
    target = REPO / ROOTS[parts[0]] / Path(*parts[:fixed])
    return not target.exists()


def test_the_path_extraction():
    text = "see `python/l4slab/engine.py`, `crates/l4slab-core/src/cc/foo.rs:12`, `l4slab.run`, `100Mbit/s`"
    assert documented_paths(text) == ["python/l4slab/engine.py", "crates/l4slab-core/src/cc/foo.rs"]
    assert not missing("python/l4slab/studies/<name>/") and not missing("crates/l4slab-core/src/cc/foo.rs")
    assert missing("python/l4slab/nope.py") and missing("l4slab/nope/<name>.csv")


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_every_documented_repository_path_exists(doc):
    paths = documented_paths(doc.read_text(encoding="utf-8"))
    assert [path for path in paths if missing(path)] == []
