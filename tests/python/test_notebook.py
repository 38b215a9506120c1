"""The example notebook runs from top to bottom and is stored with what it gives now: executed
with nbclient in a kernel of this interpreter (examples/notebooks/execute.py), every code cell
must finish without an error, the figures must come out as images, and every printed line
and table must be the stored one (else: `python examples/notebooks/execute.py`)."""

import ast
import importlib.util
import json
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import requires_engine

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "examples" / "notebooks" / "tutorial.ipynb"


def _execute_module():
    spec = importlib.util.spec_from_file_location("notebook_execute", REPO / "examples" / "notebooks" / "execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@requires_engine
def test_the_example_notebook_executes_and_is_stored_with_its_outputs():
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    execute = _execute_module()
    notebook = execute.execute(NOTEBOOK)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the time series and the bars
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "report.md" in text and "| queue | L4S CC | adopt? |" in text
    stored = nbformat.read(NOTEBOOK, as_version=4)
    assert execute.stale_cells(stored, notebook) == [], "stale notebook: run python examples/notebooks/execute.py"


def test_the_stored_notebook_has_every_cells_outputs():
    """A reader sees the results without running it: every code cell was executed, in order."""
    cells = [c for c in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1))
    assert all(c["outputs"] for c in cells)


def test_the_notebook_extra_installs_what_the_notebook_imports():
    """`pip install 'l4slab[notebook]'` gives every module the notebook and its executor
    import that the package's own dependencies do not."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    provided = {_name(d) for d in project["dependencies"] + project["optional-dependencies"]["notebook"]}
    cells = [c for c in json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells] + [(REPO / "examples" / "notebooks" / "execute.py").read_text()]
    imported = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in ("l4slab", "__future__")}
    # Module → distribution where the names differ.
    distribution = {"IPython": "ipython"}
    assert {distribution.get(m, m).lower() for m in third_party} <= provided, third_party
    assert "ipykernel" in provided, "the notebook's kernel (kernel_name python3)"


def _name(requirement: str) -> str:
    for stop in "<>=[; ~!":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower()
