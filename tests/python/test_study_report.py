"""``l4slab study report``: the generic tables and, for a PAM-shaped study, the heatmaps and
the comparison with the published panels; built-in studies by name."""

import json
import subprocess

import pytest
from conftest import l4slab_command
from study_texts import prague_vs_cubic

pytest.importorskip("l4slab._core")

from l4slab.study import builtin_studies, load_study  # noqa: E402

PAM_MINI = prague_vs_cubic(
    "pam-mini", 3, 2, "2s", study={"report": "pam2025-prague-cubic"},
    factors={"bottleneck.qdisc": {"preset": "pam2025.queues", "only": ["fifo_ecn", "dualpi2"]},
             "bottleneck.buffer": ["2bdp"], "flows.1.ecn": [1]},
)  # fmt: skip


def test_builtin_pam_study_is_listed_and_expands_to_the_full_matrix():
    assert "pam2025-prague-cubic" in builtin_studies()
    spec = load_study("pam2025-prague-cubic")
    # 9 queue types × 5 buffers × {CUBIC, CUBIC+ECN} × 10 trials.
    assert len(spec.points) == 90
    assert spec.trials == 10


def test_builtin_segment_sizing_study_sweeps_schemes_rates_and_rtts():
    assert "s2-segment-sizing" in builtin_studies()
    spec = load_study("s2-segment-sizing")
    # 5 link rates × 3 base RTTs × 5 sizing schemes.
    assert len(spec.points) == 75
    schemes = {json.dumps(p.values["flows.0.cc_params"], sort_keys=True) for p in spec.points}
    assert len(schemes) == 5


def test_report_compares_with_the_published_panels(tmp_path):
    study_file = tmp_path / "pam-mini.toml"
    study_file.write_text(PAM_MINI)
    out = tmp_path / "out"
    subprocess.run(l4slab_command("study", "run", str(study_file), "--out", str(out), "--no-progress"), check=True)
    done = subprocess.run(l4slab_command("study", "report", str(out)), check=True, capture_output=True, text=True)
    assert "report.md" in done.stdout
    report = (out / "report" / "report.md").read_text()
    assert "## PAM 2025 reproduction" in report
    assert "harm-label agreement" in report
    # Both cells are in the comparison table with the published values beside them:
    # fifo_ecn 2 BDP with ECN-CUBIC was published as 90.3 (4.6), dualpi2 as 42.7 (52.3).
    assert "(90.3)" in report and "(42.7)" in report
    for stem in ("pam_cubic_ecn_simulated", "pam_cubic_ecn_published", "goodput"):
        assert (out / "report" / f"{stem}.png").stat().st_size > 1000
        assert (out / "report" / f"{stem}.svg").stat().st_size > 1000
    rows = (out / "report" / "pam_comparison.csv").read_text().splitlines()
    assert len(rows) == 1 + 2
