"""Write the engine configs of the bit-identity corpus (`tests/corpus.rs`).

The corpus pins the engine's behaviour across refactors: each scenario below is
resolved by the Python front end into the engine's JSON (`scenarios/NAME.json`), and
`cargo test -p l4slab-core --profile test-fast --test engine corpus::` compares the sha256 of each run's canonical results with
`sha256.txt`. Regenerate the configs with `python make_corpus.py` (needs the l4slab
package) and the hashes with `L4SLAB_CORPUS_BLESS=1 cargo test -p l4slab-core --profile test-fast --test engine corpus::`
-- only in a commit that says which behaviour changed and why.
"""

from __future__ import annotations

import json
from pathlib import Path

from l4slab.scenario import scenario_from_dict

HERE = Path(__file__).parent


def sc(name: str, flows: list[dict], qdisc: str = "bfifo limit 2bdp", rate: str = "50Mbit", **top) -> dict:
    bottleneck = {"rate": rate, "qdisc": qdisc}
    bottleneck.update(top.pop("bottleneck", {}))
    base = {"name": name, "duration": "5s", "seed": 7, "bin": "100ms", "bottleneck": bottleneck, "flows": flows}
    base.update(top)
    return base


def tcp(cc: str, rtt: str = "20ms", **kw) -> dict:
    return {"kind": "tcp", "cc": cc, "rtt": rtt, **kw}


def udp(rate: str, ecn: str = "not-ect", rtt: str = "20ms", **kw) -> dict:
    return {"kind": "udp", "rate": rate, "ecn": ecn, "rtt": rtt, **kw}


PAM_FQ = "fq limit 2bdp flow_limit 2bdp orphan_mask 0 ce_threshold 5ms"
BBR2_ECN = {"ecn_enable": True, "ecn_max_rtt_us": 0}  # the PAM study's BBRv2 ECN module parameters
FQC_L4S = "fq_codel limit 2bdp target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01"

SCENARIOS = [
    # every qdisc, one CUBIC and one Reno flow
    sc("bfifo-cubic-reno", [tcp("cubic"), tcp("reno")]),
    sc("bfifo-half-bdp", [tcp("cubic", count=2)], qdisc="bfifo limit 0.5bdp"),
    sc("pfifo-cubic", [tcp("cubic", count=2)], qdisc="pfifo limit 2bdp"),
    sc("pfifo-default", [tcp("cubic")], qdisc="pfifo"),
    sc("fq-default", [tcp("cubic"), tcp("reno")], qdisc="fq"),
    sc("fq-fifo-ecn-prague-cubic", [tcp("prague"), tcp("cubic")], qdisc=PAM_FQ),
    sc("fq-fifo-ecn-prague-cubic-ecn", [tcp("prague"), tcp("cubic", ecn=1)], qdisc=PAM_FQ),
    sc("fq-nofastpath-8flows", [tcp("cubic", count=8)], qdisc="fq flow_limit 50 quantum 3028"),
    sc("pie-cubic", [tcp("cubic", count=2)], qdisc="pie limit 2bdp target 5ms"),
    sc("pie-ecn-cubic-ecn", [tcp("cubic", ecn=1), tcp("reno")], qdisc="pie limit 2bdp target 5ms ecn"),
    sc("pie-bytemode", [tcp("cubic")], qdisc="pie limit 2bdp target 5ms bytemode"),
    sc("pie-prague", [tcp("prague"), tcp("cubic")], qdisc="pie limit 2bdp target 5ms ecn"),
    sc("codel-cubic", [tcp("cubic", count=2)], qdisc="codel limit 2bdp target 5ms"),
    sc("codel-ecn-prague-cubic", [tcp("prague"), tcp("cubic", ecn=1)], qdisc="codel limit 2bdp target 5ms ecn"),
    sc("codel-ce-threshold", [tcp("dctcp"), tcp("cubic")], qdisc="codel limit 2bdp ecn ce_threshold 1ms"),
    sc("fq_codel-cubic-reno", [tcp("cubic"), tcp("reno")], qdisc="fq_codel limit 2bdp target 5ms ecn"),
    sc("fq_codel-l4s-prague-cubic", [tcp("prague"), tcp("cubic", ecn=1)], qdisc=FQC_L4S),
    sc("fq_codel-noecn-16flows", [tcp("cubic", count=12), tcp("reno", count=4)], qdisc="fq_codel noecn", rate="100Mbit"),
    sc("dualpi2-prague-cubic", [tcp("prague"), tcp("cubic")], qdisc="dualpi2 target 5ms"),
    sc("dualpi2-prague-cubic-ecn", [tcp("prague"), tcp("cubic", ecn=1)], qdisc="dualpi2"),
    sc("dualpi2-l4steam", [tcp("prague"), tcp("cubic")], qdisc="dualpi2 target 5ms variant l4steam"),
    sc("dualpi2-l4steam-limit200", [tcp("prague", rtt="80ms")], qdisc="dualpi2 limit 200 variant l4steam", rate="1Mbit", duration="10s"),
    sc("dualpi2-any-ect-step-pkt", [tcp("prague"), tcp("dctcp")], qdisc="dualpi2 any_ect step_thresh 5pkt"),
    sc("dualpi2-overflow-udp", [tcp("prague"), udp("120%", ecn="ect1")], qdisc="dualpi2 overflow"),
    sc("dualpi2-drop-enqueue", [tcp("cubic"), udp("60%", ecn="not-ect")], qdisc="dualpi2 drop_enqueue"),
    # every CC and its knobs
    sc("reno-alone-noecn", [tcp("reno", ecn=0)]),
    sc("cubic-hystart-long-rtt", [tcp("cubic", rtt="100ms")], rate="100Mbit", duration="4s"),
    sc("dctcp-step", [tcp("dctcp", rtt="1ms", count=2)], qdisc="codel limit 1000 ecn ce_threshold 1ms", rate="100Mbit"),
    sc("prague-alone-dualpi2", [tcp("prague", rtt="5ms")], qdisc="dualpi2", rate="40Mbit"),
    sc("prague-v06-alone", [tcp("prague-v06", rtt="5ms")], qdisc="dualpi2", rate="40Mbit"),
    sc("prague-v06-fallback", [tcp("prague-v06", cc_params={"ecn_fallback": 1}), tcp("cubic", ecn=1)], qdisc="codel limit 2bdp target 5ms ecn"),
    sc("prague-sizing-log", [tcp("prague", rtt="20ms", cc_params={"segment_sizing": {"scheme": "logarithmic", "k": 4.0}})], qdisc="dualpi2 limit 200 variant l4steam", rate="500kbit", duration="10s"),
    sc("prague-sizing-fixed", [tcp("prague", rtt="5ms", cc_params={"segment_sizing": {"scheme": "fixed"}})], qdisc="dualpi2 limit 200 variant l4steam", rate="200kbit", duration="10s"),
    sc("prague-window-mode", [tcp("prague", cc_params={"cwnd_mode": 0})], qdisc="dualpi2"),
    sc("prague-classic-ecn-peer", [tcp("prague", receiver_ecn=1)], qdisc="dualpi2"),
    sc("prague-fifo-no-ecn", [tcp("prague"), tcp("cubic")], qdisc="bfifo limit 2bdp"),
    # TSO, pacing, ECN negotiation, receiver options
    sc("cubic-fq-pacing-tso", [tcp("cubic", fq_pacing=True), tcp("cubic", fq_pacing=True, tso=False)]),
    sc("prague-no-tso", [tcp("prague", tso=False, count=2)], qdisc="dualpi2"),
    sc("cubic-accecn", [tcp("cubic", ecn=3, receiver_ecn=3), tcp("cubic", ecn=1, ecn_option=0)], qdisc="fq_codel limit 2bdp ecn"),
    sc("ecn-modes-4-5", [tcp("cubic", ecn=4, receiver_ecn=3), tcp("reno", ecn=5, receiver_ecn=5)], qdisc="fq_codel limit 2bdp ecn"),
    sc("no-delayed-ack", [tcp("cubic", delayed_ack=False), tcp("reno")]),
    sc("rwnd-limited", [tcp("cubic", rwnd="64kb"), tcp("cubic")]),
    sc("small-mss-iw4", [tcp("reno", mss=536, init_cwnd=4), tcp("cubic", rto_min="1s")]),
    # drop injection and loss recovery
    sc("drop-injection", [tcp("cubic", drop_segments=[5, 6, 7, 30, 100, 101, 300])], rate="100Mbit"),
    sc("drop-injection-prague", [tcp("prague", drop_segments=[20, 21, 40])], qdisc="dualpi2"),
    sc("tiny-buffer-rto", [tcp("cubic", count=4)], qdisc="bfifo limit 6000", rate="10Mbit"),
    # UDP
    sc("udp-cbr-ect1-prague", [tcp("prague"), udp("40%", ecn="ect1")], qdisc="dualpi2"),
    sc("udp-ce-and-notect", [udp("30%", ecn="ce"), udp("30%", ecn="not-ect", packet_size="500B"), tcp("reno")], qdisc="pie ecn"),
    # multi-flow, staggered, bounded transfers, warm-up, tracing, paths
    sc("staggered-bytes", [tcp("cubic", start="0.5s", bytes="1mb"), tcp("reno", start="1s", stop="2s"), tcp("cubic")], warmup="1s"),
    sc("mixed-rtts", [tcp("cubic", rtt="10ms"), tcp("cubic", rtt="80ms", fwd_delay="70ms"), tcp("prague", rtt="40ms")], qdisc="dualpi2"),
    sc("trace-sojourn", [tcp("cubic"), tcp("prague")], qdisc="dualpi2", trace_sojourn=True, duration="1s"),
    sc("access-rate-burst", [tcp("cubic", count=3)], bottleneck={"access_rate": "1Gbit", "burst": "15140B"}),
    sc("64-flows", [tcp("cubic", count=32), tcp("prague", count=32)], qdisc="dualpi2", rate="200Mbit", duration="2s", start_jitter="50ms"),
    sc("high-rate", [tcp("cubic", count=2)], qdisc="bfifo limit 2bdp", rate="1Gbit", duration="1s"),
    sc("no-jitter", [tcp("cubic", count=2)], start_jitter="0s", bin="250ms"),
    # the BBR family: v1 (loss, recovery, the 10 s PROBE_RTT), v2alpha two-sided ECN beside
    # L4S-BBRv2 (AccECN, ECT(1)) in DualPI2, two v2alpha flows of unequal RTT, v3 with ecn_low
    sc("bbr1-bfifo-cubic", [tcp("bbr"), tcp("cubic", tso=False)], qdisc="bfifo limit 0.5bdp", duration="12s"),
    sc("bbr2-l4s-bbr2-twosided-dualpi2", [tcp("bbr2-l4s", ecn=3, receiver_ecn=3, tso=False), tcp("bbr2", ecn=1, receiver_ecn=1, cc_params=BBR2_ECN, receiver_cc="bbr2", receiver_cc_params=BBR2_ECN)], qdisc="dualpi2 target 5ms variant l4steam", rate="100Mbit", duration="8s"),
    sc("bbr2-bfifo-two-rtts", [tcp("bbr2"), tcp("bbr2", rtt="40ms")], qdisc="bfifo limit 250000", duration="8s"),
    sc("bbr3-ecn-low-short-path", [tcp("bbr3", rtt="2ms", ecn=1, receiver_ecn=1, ecn_low=True), tcp("bbr3", rtt="10ms", tso=False)], qdisc="dualpi2 target 1ms", rate="100Mbit", duration="8s"),
]


def main() -> None:
    out = HERE / "scenarios"
    out.mkdir(exist_ok=True)
    names = set()
    for s in SCENARIOS:
        name = s["name"]
        assert name not in names, name
        names.add(name)
        config = scenario_from_dict(s).resolve()
        (out / f"{name}.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    print(f"{len(SCENARIOS)} scenarios written to {out}")


if __name__ == "__main__":
    main()
