"""The gallery's scenarios and the tutorial's TOML are valid, and the gallery page shows every
scenario with its figure."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GALLERY = REPO / "examples" / "gallery"
SCENARIOS = sorted(GALLERY.glob("*.toml"))


def test_the_gallery_has_six_to_eight_scenarios_each_with_its_figure():
    assert 6 <= len(SCENARIOS) <= 8
    page = (GALLERY / "README.md").read_text(encoding="utf-8")
    for path in SCENARIOS:
        assert f"`examples/gallery/{path.name}`" in page
        figure = GALLERY / "figures" / f"{path.stem}.png"
        assert figure.is_file() and 5_000 < figure.stat().st_size < 120_000  # small PNGs only
        assert f"(figures/{path.stem}.png)" in page


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_gallery_scenarios_validate(path):
    pytest.importorskip("l4slab._core")
    import l4slab

    scenario = l4slab.load_scenario(path)
    assert scenario.resolve()["flows"]


def test_the_tutorial_toml_blocks_validate(tmp_path):
    pytest.importorskip("l4slab._core")
    import l4slab
    from l4slab.study import load_study

    text = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    scenario, study = blocks
    (tmp_path / "scenario.toml").write_text(scenario)
    assert l4slab.load_scenario(tmp_path / "scenario.toml").resolve()
    assert scenario.strip() in (GALLERY / "dualpi2-coupling.toml").read_text(encoding="utf-8")
    (tmp_path / "mini-pam.toml").write_text(study)
    spec = load_study(tmp_path / "mini-pam.toml")
    assert len(spec.runs) == 3 * 2 * 5


def test_the_gallery_page_states_what_the_engine_gives_now():
    """Every scenario's numbers on the page are a new run's (make_gallery.py --check runs the
    seven scenarios again, ~2 s of engine time): a change to the engine that moves them fails
    here until the gallery is regenerated with `python examples/gallery/make_gallery.py`."""
    pytest.importorskip("l4slab._core")
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(GALLERY / "make_gallery.py"), "--check"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
