"""The engine-against-kernel table (l4slab.kernel.differential): verdict rules, and the join of
two study directories of the same plan (here both run by the engine, so every row agrees;
with a perturbed copy, the perturbed rows are named)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from l4slab.kernel import differential as kd

pytestmark = pytest.mark.engine


def test_verdict_rules():
    # goodput: 3 Mbit/s or 2 SD of the kernel's trials
    assert kd.judge("abs", 3.0, 0.0, 50.0, 47.5, 0.5).verdict == kd.WITHIN
    assert kd.judge("abs", 3.0, 0.0, 50.0, 46.0, 0.5).verdict == kd.OUTSIDE
    assert kd.judge("abs", 3.0, 0.0, 50.0, 46.0, 2.5).verdict == kd.WITHIN
    # delays: 15 % or 0.5 ms
    assert kd.judge("rel", 0.5, 0.15, 0.9, 0.5, 0.0).verdict == kd.WITHIN
    assert kd.judge("rel", 0.5, 0.15, 12.0, 10.0, 0.1).verdict == kd.OUTSIDE
    assert kd.judge("rel", 0.5, 0.15, 11.4, 10.0, 0.1).verdict == kd.WITHIN
    # counts: zero on one side only is outside, both zero within
    assert kd.judge("count", 0.0, 0.2, 0.0, 0.0, 0.0).verdict == kd.WITHIN
    assert kd.judge("count", 0.0, 0.2, 0.0, 3.0, 0.0).verdict == kd.OUTSIDE
    assert kd.judge("count", 0.0, 0.2, 110.0, 100.0, 0.0).verdict == kd.WITHIN
    assert kd.judge("count", 0.0, 0.2, 130.0, 100.0, 0.0).verdict == kd.OUTSIDE
    assert kd.judge("abs", 3.0, 0.0, math.nan, 1.0, 0.0).verdict == kd.MISSING


STUDY = Path(kd.__file__).resolve().parents[1] / "studies" / "kernel-differential" / "study.toml"


def _short_study(tmp_path):
    text = STUDY.read_text()
    assert 'duration = "20s"' in text and 'warmup = "5s"' in text
    path = tmp_path / "short.toml"
    path.write_text(text.replace('duration = "20s"', 'duration = "3s"').replace('warmup = "5s"', 'warmup = "1s"'))
    return str(path)


def _run(study, out, *extra):
    cmd = [sys.executable, "-m", "l4slab", "study", "run", study, "--out", str(out), "--panel", "dctcp-l,prague-alone",
           "--no-progress", "--jobs", "1", *extra]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_same_plan_twice_agrees_and_a_perturbed_copy_is_named(tmp_path):
    study = _short_study(tmp_path)
    _run(study, tmp_path / "d")
    _run(study, tmp_path / "d" / "kernel")
    frame = kd.compare(tmp_path / "d")
    judged = frame[frame["verdict"] != kd.MISSING]
    assert len(judged) >= 4 * 5, "4 points, flow and bottleneck metrics"
    assert (judged["verdict"] == kd.WITHIN).all()
    assert set(frame["metric"]) >= {"goodput_mbps", "mean_srtt_ms", "sojourn_mean_ms", "utilisation"}
    classes = frame[frame["scope"] == "class"]
    assert set(classes["flow"]) == {"L"}, "DualPI2's L queue carried the packets (C stayed empty)"
    text = kd.table_markdown(frame)
    assert "All: " in text and "Outside tolerance" not in text

    # A kernel whose goodput is 10 Mbit/s lower everywhere: every goodput row is outside.
    from l4slab.study import catalog

    ker = catalog.load(tmp_path / "d" / "kernel").summaries.copy()
    ker.loc[ker["metric"] == "goodput_mbps", "mean"] -= 10.0
    original = kd._summaries
    kd._summaries = lambda d: ker if d.name == "kernel" else original(d)
    try:
        shifted = kd.compare(tmp_path / "d")
    finally:
        kd._summaries = original
    goodput = shifted[shifted["metric"] == "goodput_mbps"]
    assert len(goodput) and (goodput["verdict"] == kd.OUTSIDE).all()
    assert "Outside tolerance" in kd.table_markdown(shifted)


def test_not_a_study_directory_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "l4slab", "kernel", "compare", str(tmp_path)], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a study directory" in done.stderr
