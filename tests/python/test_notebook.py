"""The example notebook runs from top to bottom: executed with nbclient in a
kernel of this interpreter; every code cell must finish without an error and the figures
must come out as images."""

from pathlib import Path

import pytest
from conftest import requires_engine

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "examples" / "notebooks" / "tutorial.ipynb"


@requires_engine
def test_the_example_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # the time series and the bars
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "report.md" in text and "| queue | L4S CC | adopt? |" in text
