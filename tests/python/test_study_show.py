"""``l4slab study show NAME``: the study file headed by what it reproduces, its factors and
levels, run count, estimated time and published data; the output is a study file a user
can copy, edit and run."""

from __future__ import annotations

import subprocess

import pytest
from conftest import l4slab_command, requires_engine

pytestmark = requires_engine


def _show(name: str) -> subprocess.CompletedProcess:
    return subprocess.run(l4slab_command("study", "show", name), capture_output=True, text=True, timeout=120)


def test_show_heads_the_file_with_what_a_user_needs(tmp_path):
    result = _show("dualq-multiflow")
    assert result.returncode == 0, result.stderr
    head = [line for line in result.stdout.splitlines() if line.startswith("# ")][:30]
    text = "\n".join(head)
    assert "reproduces: the DualQ paper (De Schepper et al., Dual Queue Coupled AQM) §IV-D, Figure 7" in text
    assert "flows.1.cc (2): cubic, reno" in text
    assert "points: 60 x 1 trial(s) = 60 runs" in text
    assert "estimated time: about" in text and "published data: none" in text
    # 60 runs of 70 s at 40 Mbit/s: 60 * 70 * 40e6 * 1.5 / (1514 * 8) = 20.8 M packets.
    assert "(21 M packets" in text


def test_show_output_is_a_study_file_to_copy_and_change(tmp_path):
    from l4slab.study.spec import load_study

    copy = tmp_path / "my.toml"
    copy.write_text(_show("dualq-multiflow").stdout, encoding="utf-8")
    original, copied = load_study("dualq-multiflow"), load_study(copy)
    assert [r.id for r in copied.runs] == [r.id for r in original.runs]
    text = copy.read_text(encoding="utf-8").replace('"flows.1.cc" = ["cubic", "reno"]', '"flows.1.cc" = ["reno"]')
    copy.write_text(text, encoding="utf-8")
    assert len(load_study(copy).points) == 30


@pytest.mark.parametrize("name", ["coexistence", "s2-syn-flood", "pam2025-prague-cubic", "ecn-threshold"])
def test_show_names_published_data(name):
    result = _show(name)
    assert result.returncode == 0, result.stderr
    published = next(line for line in result.stdout.splitlines() if line.startswith("# published data:"))
    expected = {
        "coexistence": "numbers stated in the paper's text",
        "s2-syn-flood": "none",
        "pam2025-prague-cubic": "the PAM 2025 published tables",
        "ecn-threshold": "none",
    }[name]
    assert expected in published


def test_show_of_an_unknown_study_is_one_line():
    result = _show("no-such-study")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "neither a built-in study" in result.stderr


def test_show_prints_the_measured_wall_time_of_a_builtin_study():
    from l4slab.scenario.load import tomllib
    from l4slab.study import registry
    from l4slab.study.spec import load_study

    table = tomllib.loads((registry._root() / "wall_times.toml").read_text(encoding="utf-8"))
    assert set(table) <= set(registry.builtin_studies())
    for name, entry in table.items():
        assert entry["seconds"] > 0 and entry["jobs"] >= 1 and entry["runs"] >= 1, name
    name = "ecn-threshold"
    head = "\n".join(line for line in _show(name).stdout.splitlines() if line.startswith("# "))
    expected = f"measured time: {table[name]['seconds']} s with --jobs 1"
    if len(load_study(name).runs) == table[name]["runs"]:
        assert expected in head
    else:  # the study changed since it was measured: no stale figure is shown
        assert "measured time" not in head


def _builtin():
    from l4slab.study import registry

    return registry.builtin_studies()


@pytest.mark.parametrize("name", _builtin())
def test_the_outline_show_prints_is_the_full_expansion(name):
    """`study show` outlines a study without resolving every point (spec.outline_study): its
    factors, point count and packet estimate are those of the full expansion."""
    from l4slab.cli.study import _estimate_packets
    from l4slab.study.spec import load_study, outline_study

    outline, spec = outline_study(name), load_study(name)
    assert [(f.path, f.values) for f in outline.factors] == [(f.path, f.values) for f in spec.factors]
    assert outline.points == len(spec.points) and outline.trials == spec.trials
    full = sum(_estimate_packets(spec.config(run)) for run in spec.runs)
    assert sum(_estimate_packets(c) * n * outline.trials for c, n in outline.scenarios) == pytest.approx(full)
