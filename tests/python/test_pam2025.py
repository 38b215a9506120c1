"""The built-in `pam2025` study: its panels, their run counts and testbed settings, and the
PAM-era Prague fallback vintage.

Panels whose CCs the engine does not have yet (BBR family) are skipped per CC, not silently
passed: each BBR test names the CC it needs.
"""

from __future__ import annotations

import l4slab
import pytest
import tomllib
from l4slab import schema
from l4slab.errors import ScenarioError
from l4slab.study import registry
from l4slab.study.spec import load_study
from study_texts import prague_vs_cubic

STUDY = registry.study_file("pam2025")
PANELS = tomllib.loads(STUDY.read_text(encoding="utf-8"))["panels"]

#: The paper's 19 one-vs-one panels (notebook data files fatihsarpkaya/L4S-PAM2025, see study.toml).
ONE_VS_ONE = [
    "prague-cubic", "prague-cubic-ecn", "prague-bbr1", "prague-bbr2", "prague-bbr2-onesided",
    "prague-bbr2-twosided", "prague-bbr3-noecn", "prague-bbr3", "prague-bbr3-short",
    "praguefb-cubic-ecn", "praguefb-bbr2-onesided",
    "bbr2l4s-cubic", "bbr2l4s-cubic-ecn", "bbr2l4s-bbr1", "bbr2l4s-bbr2", "bbr2l4s-bbr2-onesided",
    "bbr2l4s-bbr2-twosided", "bbr2l4s-bbr3", "bbr2l4s-bbr3-short",
]  # fmt: skip
MIXES = ["prague-mix", "bbr2l4s-mix"]
QUEUES = 9
BUFFERS = 5
TRIALS = 10
MIX_PAIRS = 12  # 1v2 1v5 1v10 1v25, 2v1 5v1 10v1 25v1, 2v2 5v5 10v10 25v25
MIX_QUEUES = 6


def _ccs(panel: str) -> set[str]:
    """The congestion controls a panel needs (its set values for flows.*.cc and receiver_cc)."""
    ccs = {"prague"}
    for path, value in PANELS[panel].get("set", {}).items():
        if path.endswith(".cc") or path.endswith(".receiver_cc"):
            ccs.add(value)
    return ccs


def _needs(panel: str):
    missing = sorted(_ccs(panel) - set(schema.congestion_control_names()))
    return pytest.mark.skipif(bool(missing), reason=f"engine has no {', '.join(missing)} yet")


def test_panel_list_and_expected_run_counts():
    assert list(PANELS) == ONE_VS_ONE + MIXES
    assert len(ONE_VS_ONE) == 19
    per_panel = QUEUES * BUFFERS * TRIALS
    per_mix = MIX_PAIRS * MIX_QUEUES * TRIALS
    assert (per_panel, per_mix) == (450, 720)
    # The whole study: 19 × 450 + 2 × 720 = 8 550 + 1 440 = 9 990 runs.
    assert len(ONE_VS_ONE) * per_panel + len(MIXES) * per_mix == 9990


def test_prague_cubic_panels_resolve_as_the_testbed_ran_them():
    spec = load_study("pam2025", panels=["prague-cubic", "prague-cubic-ecn", "praguefb-cubic-ecn"])
    assert [f.column for f in spec.factors] == ["panel", "bottleneck_qdisc", "bottleneck_buffer"]
    assert len(spec.points) == 3 * 45 and len(spec.runs) == 3 * 450
    assert len({r.id for r in spec.runs}) == len(spec.runs)
    limits = {"0.5bdp": 42, "1bdp": 84, "2bdp": 167, "4bdp": 334, "8bdp": 667}
    for point in spec.points:
        panel, queue, buffer = (point.values[k] for k in ("panel", "bottleneck.qdisc", "bottleneck.buffer"))
        l4s, classic = point.config["flows"]
        qdisc = point.config["bottleneck"]["qdisc"]
        assert point.config["bottleneck"]["rate_bps"] == 100_000_000
        assert l4s["rtt_ns"] == classic["rtt_ns"] == 10_000_000
        # ethtool gso/tso off on the testbed, but Linux TCP forces GSO (sk_setup_caps) and defers
        # multi-segment skbs (tcp_tso_should_defer): docs/fidelity-pam-hosts.md, "GSO on the PAM hosts".
        assert l4s["tso"] is True and classic["tso"] is True
        assert l4s["tso_defer"] is True and classic["tso_defer"] is True
        assert (l4s["cc"], l4s["receiver_ecn"], classic["cc"]) == ("prague", 3, "cubic")
        assert classic.get("ecn", 0) == (0 if panel == "prague-cubic" else 1)
        if panel != "prague-cubic":
            assert classic["receiver_ecn"] == 1  # tcp_ecn = 1 at both ends
        # The testbed's 2024 L4STeam 5.15 Prague build (tcp-prague 90aea47f): version pam2025,
        # whose defaults are its app-limited growth gate and 20-bit detector constants.
        vintage = {"version": "pam2025"}
        fallback = {**vintage, "ecn_fallback": 1}
        assert l4s.get("cc_params") == (fallback if panel.startswith("praguefb") else vintage)
        if queue == "dualpi2":
            # The L4STeam sch_dualpi2.c, its default limit in every buffer column, T = 5 ms.
            assert (qdisc["variant"], qdisc["limit_packets"], qdisc["target_ns"]) == ("l4steam", 10000, 5_000_000)
        elif queue == "fifo":
            assert qdisc["limit_bytes"] == int(float(buffer.removesuffix("bdp")) * 125_000)
        else:
            assert qdisc["limit_packets"] == limits[buffer]


def test_mix_panel_counts_and_flows():
    spec = load_study("pam2025", panels=["prague-mix"])
    assert len(spec.points) == MIX_PAIRS * MIX_QUEUES and len(spec.runs) == 720
    assert {p.values["bottleneck.qdisc"] for p in spec.points} == {
        "fifo", "fifo_ecn", "codel_ecn", "fq_codel", "fq_codel_l4s", "dualpi2"
    }  # fmt: skip
    assert {p.values["bottleneck.buffer"] for p in spec.points} == {"2bdp"}
    pairs = {(p.values["flows.0.count"], p.values["flows.1.count"]) for p in spec.points}
    assert pairs == {(1, 2), (1, 5), (1, 10), (1, 25), (2, 1), (5, 1), (10, 1), (25, 1),
                     (2, 2), (5, 5), (10, 10), (25, 25)}  # fmt: skip
    point = next(p for p in spec.points if p.values["flows.0.count"] == 25 and p.values["flows.1.count"] == 25)
    ccs = [f["cc"] for f in point.config["flows"]]
    assert ccs == ["prague"] * 25 + ["cubic"] * 25
    assert all(f.get("ecn") == 1 for f in point.config["flows"][25:])


def test_unknown_panel_is_one_line_error():
    with pytest.raises(ScenarioError, match=r"--panel: 'nope' is not a panel of this study; panels: prague-cubic, "):
        load_study("pam2025", panels=["nope"])
    with pytest.raises(ScenarioError, match="this study has no \\[panels\\]"):
        load_study("dualq-multiflow", panels=["prague-cubic"])
    assert len(load_study("pam2025-prague-cubic", panels=["prague-cubic"]).points) == 45


@pytest.mark.parametrize("panel", ["prague-bbr3-short", "bbr2l4s-bbr3-short"])
def test_short_path_panels_use_2ms_bdp_and_1ms_thresholds(panel):
    pytest.importorskip("l4slab")
    if not _ccs(panel) <= set(schema.congestion_control_names()):
        pytest.skip(f"engine has no {sorted(_ccs(panel) - set(schema.congestion_control_names()))} yet")
    spec = load_study("pam2025", panels=[panel])
    assert len(spec.runs) == 450
    bdp = 100_000_000 * 2 // 1000 // 8  # 25 000 B at 2 ms
    for point in spec.points:
        l4s, classic = point.config["flows"]
        assert l4s["rtt_ns"] == classic["rtt_ns"] == 2_000_000
        assert (classic["cc"], classic["ecn"], classic["receiver_ecn"], classic["ecn_low"]) == ("bbr3", 1, 1, True)
        n = float(point.values["bottleneck.buffer"].removesuffix("bdp"))
        qdisc = point.config["bottleneck"]["qdisc"]
        queue = point.values["bottleneck.qdisc"]
        if queue == "fifo":
            assert qdisc["limit_bytes"] == int(n * bdp)
        elif queue != "dualpi2":
            assert qdisc["limit_packets"] == int(n * bdp) // 1500 + 1
        for field in ("target_ns", "ce_threshold_ns"):
            if field in qdisc and qdisc[field] is not None and not (queue == "fq_codel" and field == "ce_threshold_ns"):
                assert qdisc[field] == 1_000_000, (queue, field, qdisc[field])


@pytest.mark.parametrize("panel", [p for p in ONE_VS_ONE + MIXES if "bbr" in p])
def test_bbr_panels_resolve(panel):
    if not _ccs(panel) <= set(schema.congestion_control_names()):
        pytest.skip(f"engine has no {sorted(_ccs(panel) - set(schema.congestion_control_names()))} yet")
    spec = load_study("pam2025", panels=[panel])
    assert len(spec.runs) == (720 if panel.endswith("mix") else 450)
    l4s, classic = spec.points[0].config["flows"][0], spec.points[0].config["flows"][-1]
    settings = PANELS[panel]["set"]
    if settings.get("flows.0.cc") == "bbr2-l4s":
        assert l4s["cc"] == "bbr2-l4s"
    if panel.endswith("bbr2-onesided"):
        assert classic["cc_params"] == {"ecn_enable": True, "ecn_max_rtt_us": 0}
        assert (classic["ecn"], classic["receiver_ecn"], classic["receiver_cc"]) == (1, 1, "cubic")
    if panel.endswith("bbr2-twosided"):
        assert classic["receiver_cc"] == "bbr2"
        assert classic["receiver_cc_params"] == {"ecn_enable": True, "ecn_max_rtt_us": 0}


# --- the Prague fallback vintage (L4STeam/linux issue #38) ----------------------------------------


def _vintage_run(constants: str, fallback: int = 1) -> float:
    """Prague's share of 100 Mbit/s against ECN-CUBIC in the L4STeam DualPI2, 20 s (not the paper's
    60 s: long enough for the detector, whose score settles within a few α rounds)."""
    scenario = {
        "duration": "20s",
        "bottleneck": {"rate": "100Mbit", "qdisc": "dualpi2 target 5ms variant l4steam", "bdp_rtt": "10ms"},
        "flows": [
            {"label": "l4s", "cc": "prague", "rtt": "10ms", "tso": False,
             "cc_params": {"ecn_fallback": fallback, "fallback_constants": constants}},
            {"label": "classic", "cc": "cubic", "ecn": 1, "receiver_ecn": 1, "rtt": "10ms", "tso": False},
        ],
    }  # fmt: skip
    flows = l4slab.run(scenario, seed=3).flows.set_index("label")
    return float(flows.loc["l4s", "goodput_mbps"]) / 100.0


def test_pam_era_fallback_constants_harm_prague_in_dualpi2():
    # PAM 2025 §4.1: with the fallback on, Prague got much less than its share in DualPI2.
    # The unrescaled 20-bit references make the detector call DualPI2's L queue "classic":
    # Prague reduces like Reno at each CWR while its marks keep coming at L4S rate.
    assert _vintage_run("pam2025") < 0.20
    # Today's constants: the detector sees a shallow, steady queue and stays L4S; the share
    # is the fallback-off one (≈ 45 %, the paper's 42–43 % for ECN-CUBIC in DualPI2).
    current = _vintage_run("current")
    assert 0.30 < current < 0.60
    assert current == pytest.approx(_vintage_run("current", fallback=0), abs=0.02)


def test_fallback_constants_bad_value_is_one_line():
    scenario = {
        "duration": "1s",
        "bottleneck": {"rate": "100Mbit", "qdisc": "pfifo"},
        "flows": [{"cc": "prague", "rtt": "10ms", "cc_params": {"fallback_constants": "1999"}}],
    }
    with pytest.raises(ScenarioError) as err:
        l4slab.run(scenario)
    message = str(err.value)
    assert "\n" not in message and "fallback_constants" in message and "pam2025" in message


MINI = prague_vs_cubic(
    "mini-pam", 1, 1, "2s", labels=("l4s", "classic"), study={"report": "pam2025"},
    flows=({"tso": False}, {"ecn": 1, "receiver_ecn": 1, "tso": False}),
    factors={"bottleneck.qdisc": {"preset": "pam2025.testbed", "only": ["dualpi2"]}, "bottleneck.buffer": ["2bdp"]},
    tail='[panels.prague-cubic-ecn]\n[panels.prague-mix]\nzip = { mix = { "flows.0.count" = [1, 2], "flows.1.count" = [2, 2] } }\n',
)  # fmt: skip


def test_pam2025_report_sections_on_a_mini_study(tmp_path):
    from l4slab import study
    from l4slab.study.report import report

    path = tmp_path / "mini.toml"
    path.write_text(MINI, encoding="utf-8")
    result = study.run(path, out=tmp_path / "out", jobs=1)
    assert (result.total, result.failed) == (3, 0)
    text = report(result.directory).read_text(encoding="utf-8")
    assert "## Comparison with the published table (pam2025_published.csv)" in text
    assert "| prague-cubic-ecn | 1 |" in text  # one cell compared: dualpi2, 2 BDP
    assert "### prague-cubic-ecn" in text and (result.directory / "report" / "pam2025_prague-cubic-ecn.png").is_file()
    assert "## Multi-flow mixes: share per kind" in text
    # one row per kind and mix; the fair share of 2 of 4 flows is 50 %, of 1 of 3 is 33 %
    assert "| prague-mix | dualpi2 | 2v2 | l4s |" in text and "| 50 % |" in text and "| 33 % |" in text


PANEL_STUDY = """
[study]
name = "p"
[base]
duration = "1s"
[base.bottleneck]
rate = "10Mbit"
[[base.flows]]
rtt = "10ms"
[factors]
"bottleneck.buffer" = ["1bdp", "2bdp"]
{panels}
"""


def _panel_study(tmp_path, text: str, **kwargs):
    path = tmp_path / "p.toml"
    path.write_text(PANEL_STUDY.format(panels=text), encoding="utf-8")
    return load_study(path, **kwargs)


def test_panels_union_their_points_with_a_panel_column(tmp_path):
    spec = _panel_study(
        tmp_path,
        '[panels.a]\n[panels.b]\nset = {"flows.0.rtt" = "20ms"}\nfactors = {"bottleneck.buffer" = ["4bdp"]}\n'
        '[panels.c]\nzip = {z = {"flows.0.count" = [1, 1], "flows.0.rtt" = ["5ms", "6ms"]}}\n',
    )
    assert [f.column for f in spec.factors] == ["panel", "bottleneck_buffer", "flows_0_count", "flows_0_rtt"]
    assert [(p.values["panel"], p.values["bottleneck.buffer"]) for p in spec.points] == [
        ("a", "1bdp"), ("a", "2bdp"), ("b", "4bdp"), ("c", "1bdp"), ("c", "1bdp"), ("c", "2bdp"), ("c", "2bdp"),
    ]  # fmt: skip
    assert spec.points[2].config["flows"][0]["rtt_ns"] == 20_000_000
    assert spec.points[0].values["flows.0.count"] is None  # a panel leaves others' factors empty
    assert spec.points[0].key.startswith('[["panel","a"]')
    only_b = _panel_study(tmp_path, "[panels.a]\n[panels.b]\n", panels=["b"])
    assert [p.values["panel"] for p in only_b.points] == ["b", "b"]
    # The same point in two panels gets different seeds (the key holds the panel).
    both = _panel_study(tmp_path, "[panels.a]\n[panels.b]\n")
    assert both.runs[0].seed != both.runs[2].seed


@pytest.mark.parametrize(
    ("panels", "message"),
    [
        (
            "[panels.a]\nsett = {}\n",
            r"^panels\.a\.sett: unknown key; allowed: doc, set, factors, zip, exclude, filter$",
        ),
        ('[panels.a]\nset = {"flows.3.rtt" = "1ms"}\n', r"^panels\.a\.set: flows\.3\.rtt: no such entry"),
        ('[panels.a]\nfactors = {"bottleneck.buffer" = []}\n', r"^panels\.a\.factors\.bottleneck\.buffer: \[\] is not"),
        ('[panels.a]\nzip = {z = {"flows.0.count" = [1, 1]}}\n', r"^panels\.a\.zip\.z: a repeated row of values"),
        ('[panels.a]\nset = {"flows.0.rtt" = "fast"}\n', r"^point panel=a, bottleneck\.buffer=1bdp: .*fast"),
    ],
)
def test_panel_mistakes_are_one_line(tmp_path, panels, message):
    with pytest.raises(ScenarioError, match=message) as err:
        _panel_study(tmp_path, panels)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("panel", ["prague-bbr3-short", "bbr2l4s-bbr3-short"])
def test_short_path_geometry_without_the_bbr_ccs(panel):
    """The 2 ms panels' path, BDP and thresholds, checked now: the same panel with CUBIC in
    place of BBRv3 (and without its ecn_low key), so it resolves before the BBR CCs land."""
    from l4slab.study.spec import study_from_dict

    data = tomllib.loads(STUDY.read_text(encoding="utf-8"))
    settings = dict(data["panels"][panel]["set"])
    settings.pop("flows.1.ecn_low")
    settings["flows.1.cc"] = "cubic"
    if settings.get("flows.0.cc") == "bbr2-l4s":
        settings["flows.0.cc"] = "prague"
    data["panels"] = {panel: {**data["panels"][panel], "set": settings}}
    spec = study_from_dict(data, panels=[panel])
    assert len(spec.runs) == 450
    bdp = 25_000  # 100 Mbit/s × 2 ms
    for point in spec.points:
        assert [f["rtt_ns"] for f in point.config["flows"]] == [2_000_000, 2_000_000]
        n = float(point.values["bottleneck.buffer"].removesuffix("bdp"))
        queue, qdisc = point.values["bottleneck.qdisc"], point.config["bottleneck"]["qdisc"]
        if queue == "fifo":
            assert qdisc["limit_bytes"] == int(n * bdp)  # 12 500 … 200 000 B
        elif queue == "dualpi2":
            assert (qdisc["limit_packets"], qdisc["step_thresh_ns"], qdisc["variant"]) == (10000, 1_000_000, "l4steam")
        else:
            assert qdisc["limit_packets"] == int(n * bdp) // 1500 + 1  # 9 … 134 packets
        thresholds = {k: v for k, v in qdisc.items() if k in ("target_ns", "ce_threshold_ns")}
        if queue != "fifo":  # bfifo has no threshold
            assert thresholds and set(thresholds.values()) == {1_000_000}, (queue, thresholds)


def test_bbr2l4s_panels_receive_with_the_senders_cc_as_the_testbed():
    # The notebook sets rx_L4S's default CC to cc_tx_L4S (`sysctl -w
    # net.ipv4.tcp_congestion_control=bbr2`), so the receiving socket runs L4STeam bbr2
    # with ecn_enable (its default): DCTCP-style CE echo over AccECN.
    panels = [p for p in ONE_VS_ONE + MIXES if p.startswith("bbr2l4s")]
    spec = load_study("pam2025", panels=panels)
    for point in spec.points:
        l4s = point.config["flows"][0]
        assert (l4s["cc"], l4s["receiver_cc"], l4s["receiver_ecn"]) == ("bbr2-l4s", "bbr2-l4s", 3), point.values


def test_prague_cubic_study_is_pam2025s_two_panels_point_for_point():
    """Its panels are pam2025's of the same names (so `--published pam2025` matches them), and
    each of its 90 points runs the engine config of pam2025's point of the same panel, queue
    and buffer."""
    small = load_study("pam2025-prague-cubic")
    full = load_study("pam2025", panels=["prague-cubic", "prague-cubic-ecn"])

    def key(point):
        return tuple(point.values[p] for p in ("panel", "bottleneck.qdisc", "bottleneck.buffer"))

    def config(point):
        return {k: v for k, v in point.config.items() if k != "name"}

    theirs = {key(p): config(p) for p in full.points}
    assert len(small.points) == len(theirs) == 90
    for point in small.points:
        assert config(point) == theirs[key(point)], key(point)


def test_prague_cubic_study_runs_the_pam_testbed_settings():
    """`pam2025-prague-cubic` is the two Prague-vs-CUBIC panels alone: it must run the
    testbed as `pam2025` does (path timing, Prague's vintage and receiver, the testbed's
    queues, CUBIC's 5.13 HyStart), so a change to one study cannot leave the other behind."""
    full = tomllib.loads(STUDY.read_text(encoding="utf-8"))
    small = tomllib.loads(registry.study_file("pam2025-prague-cubic").read_text(encoding="utf-8"))
    assert small["base"]["delay_node_timer_latency"] == full["base"]["delay_node_timer_latency"]
    l4s, prague = full["base"]["flows"][0], small["base"]["flows"][0]
    for key in ("cc", "rtt", "tso", "tso_defer", "tso_defer_ack", "receiver_kernel", "receiver_rcvbuf",
                "receiver_sack_compression"):
        assert prague[key] == l4s[key], key
    for key in ("tso", "tso_defer", "tso_defer_ack", "receiver_rcvbuf", "receiver_sack_compression"):
        assert small["base"]["flows"][1][key] == full["base"]["flows"][1][key], key
    assert prague["cc_params"] == PANELS["prague-cubic"]["set"]["flows.0.cc_params"]
    assert small["base"]["flows"][1]["cc_params"] == PANELS["prague-cubic"]["set"]["flows.1.cc_params"]
    assert small["factors"]["bottleneck.qdisc"] == full["factors"]["bottleneck.qdisc"]
    assert small["factors"]["bottleneck.buffer"] == full["factors"]["bottleneck.buffer"]
