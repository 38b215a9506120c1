"""Execute the example notebook and store it with its outputs:
``python examples/notebooks/execute.py`` (needs ``pip install 'l4slab[notebook]'``).

The notebook is kept with the outputs of its last execution, so a reader sees the tables and
figures without running it. ``--check`` executes it again and exits 1, naming the cells, when
the stored outputs are not what it gives now: every printed line and every table (``text/plain``),
and the number of figures (a figure's PNG bytes depend on the matplotlib build, its numbers are
in the tables). ``tests/python/test_notebook.py`` runs the check.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent / "tutorial.ipynb"


def execute(path: Path = NOTEBOOK) -> nbformat.NotebookNode:
    """The notebook at ``path`` executed top to bottom in a kernel of this interpreter, in a
    scratch directory (no timing metadata, so an unchanged notebook stores unchanged)."""
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        client = NotebookClient(
            notebook, timeout=600, kernel_name="python3", record_timing=False, resources={"metadata": {"path": scratch}}
        )
        client.execute()
    return notebook


def outputs(notebook: nbformat.NotebookNode) -> list[list[str]]:
    """Per code cell, what the check compares: the text of each output, a figure as ``<image>``."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        seen = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                seen.append(out.get("text", ""))
            elif out.get("output_type") == "error":
                seen.append(f"error: {out.get('ename')}: {out.get('evalue')}")
            else:
                data = out.get("data", {})
                seen.append("<image>" if "image/png" in data else data.get("text/plain", ""))
        cells.append(seen)
    return cells


def stale_cells(stored: nbformat.NotebookNode, fresh: nbformat.NotebookNode) -> list[int]:
    """The code cells (counted from 1) whose outputs differ between the two notebooks."""
    a, b = outputs(stored), outputs(fresh)
    return [i + 1 for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]


def main(argv: list[str]) -> int:
    fresh = execute()
    if argv == ["--check"]:
        stale = stale_cells(nbformat.read(NOTEBOOK, as_version=4), fresh)
        if stale:
            cells = ", ".join(map(str, stale))
            print(f"stale notebook: code cell(s) {cells} (run python examples/notebooks/execute.py)", file=sys.stderr)
            return 1
        return 0
    nbformat.write(fresh, NOTEBOOK)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
