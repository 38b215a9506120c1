"""Every scenario and study file under ``examples/`` is valid as the program reads it today: a
study file expands (``l4slab.study.spec.load_study``, every point resolved), a scenario file
loads and resolves (``l4slab.load_scenario``). A scenario whose flows name a kernel-only
congestion control (``[kernel] cc_sources``) is refused by the engine in one line that says
to use the kernel backend, which is what its header says to do. Nothing runs here: the
examples' own results are the docs' and the tests' business; this keeps the files that docs
quote from drifting away from the schema."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from l4slab import ScenarioError, load_scenario
from l4slab.study.spec import load_study

ROOT = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(ROOT.rglob("*.toml"))


def test_there_are_example_files():
    assert len(FILES) >= 30, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_an_example_file_is_valid(path: Path):
    data = tomllib.loads(path.read_text())
    if "study" in data or "factors" in data:
        spec = load_study(path)
        assert spec.runs, path
        return
    kernel_only = set(data.get("kernel", {}).get("cc_sources", ()))
    if kernel_only:
        with pytest.raises(ScenarioError) as info:
            load_scenario(path).resolve()
        message = str(info.value)
        assert "\n" not in message and "kernel-only" in message and "--backend kernel" in message
        return
    load_scenario(path).resolve()
