"""The built-in studies of the seed papers (s2-syn-flood, dualq-basic, dualq-web,
coexistence): every point validates, and a quick variant of the cheap ones runs."""

import pytest
from l4slab.study.spec import load_study

SEED_STUDIES = {
    "s2-syn-flood": 6,
    "dualq-basic": 75,
    "dualq-web": 6,
    "coexistence": 4,
    "dualq-multiflow": 60,
    "dualq-mixed-rtt": 76,
    "dualq-overload": 10,
    "s2-many-flows": 75,
    "s2-fairness": 24,
    "ecn-threshold": 4,
}


@pytest.mark.parametrize(("name", "points"), sorted(SEED_STUDIES.items()))
def test_seed_study_expands_and_resolves(name, points):
    pytest.importorskip("l4slab._core")
    spec = load_study(name)
    assert spec.name == name
    assert len(spec.points) == points


def test_dualq_basic_pairs_each_aqm_with_its_ccs():
    pytest.importorskip("l4slab._core")
    spec = load_study("dualq-basic")
    pairs = set()
    for run in spec.runs:
        config = spec.config(run)
        pairs.add((config["bottleneck"]["qdisc"]["kind"], config["flows"][0]["cc"], config["flows"][0]["ecn"]))
        assert config["flows"][0]["rtt_ns"] == config["flows"][1]["rtt_ns"]
        # The DualQ paper's testbed (5.10.31-prague-37): fq on every host, L4STeam's DualPI2.
        assert all(f["fq_pacing"] for f in config["flows"])
        if config["bottleneck"]["qdisc"]["kind"] == "dualpi2":
            assert config["bottleneck"]["qdisc"]["variant"] == "l4steam"
    assert pairs == {("dualpi2", "prague-v06", 3), ("pie", "cubic", 1), ("fq_codel", "cubic", 1)}


def test_s2_syn_flood_quick_run_shows_the_flood_share():
    """A 6 s quick variant of one point: the ECT(1) flood at 9 Mbit/s of 54-B frames
    shares the L queue with Prague; the flood is counted on its frames."""
    pytest.importorskip("l4slab._core")
    from l4slab import engine

    spec = load_study("s2-syn-flood", overrides={"duration": "6s", "warmup": "2s"})
    run = next(r for r in spec.runs if spec.config(r)["sources"][0]["ecn"] == "ect1")
    config = spec.config(run)
    assert config["sources"][0]["syn_bytes"] == 54
    raw, _wall = engine.simulate(config)
    flood = next(f for f in raw["flows"] if f["kind"] == "synflood")
    prague = next(f for f in raw["flows"] if f["kind"] == "tcp")
    # Together they cannot exceed the 10 Mbit/s link; the flood gets a real share.
    assert flood["throughput_mbps"] + prague["throughput_mbps"] <= 10.05
    assert flood["throughput_mbps"] > 1.0
