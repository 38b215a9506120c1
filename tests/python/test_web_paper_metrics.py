"""The DualQ paper's App. B and S2 metrics (l4slab.analysis.paper_metrics) on inputs with known answers."""

import math

import numpy as np
import pandas as pd
import pytest
from l4slab.analysis import paper_metrics as pm


def test_warmup_follows_appendix_b():
    # T_w = 5 + rate·rtt/100 (Mbit/s, ms): 4 Mbit/s × 5 ms → 5.2 s; 200 × 100 → 205 s.
    assert pm.warmup_s(4, 5) == pytest.approx(5.2)
    assert pm.warmup_s(200, 100) == pytest.approx(205.0)
    with pytest.raises(ValueError, match="rate -1"):
        pm.warmup_s(-1, 5)


def test_sample_stats_of_one_second_samples():
    s = pm.sample_stats(list(range(101)) + [float("nan")])
    assert s == {"mean": 50.0, "p1": 1.0, "p25": 25.0, "p99": 99.0}


def test_rates_windows_and_balance():
    # 3 flows on 30 Mbit/s: fair rate 10; a 15 Mbit/s flow has normalised rate 1.5.
    assert pm.normalised_rate(15.0, 30.0, 3) == pytest.approx(1.5)
    # W = r (qd + R): 8 Mbit/s = 1 MB/s over 5 ms + 15 ms → 20 kB.
    assert pm.window_bytes(8e6, 0.015, 0.005) == pytest.approx(20_000.0)
    assert pm.balance_ratio([4, 6], [2.5, 2.5]) == pytest.approx(2.0)


def test_s2_packet_metrics():
    mean, sd = pm.packet_size_stats([1000, 1448, 1448, 1000])
    assert (mean, sd) == (1224.0, 224.0)
    # 10 000 packets in 10 s at a 20 ms RTT: 20 per RTT.
    assert pm.per_rtt(10_000, 10.0, 0.020) == pytest.approx(20.0)
    assert np.allclose(pm.inter_packet_gaps([0.3, 0.1, 0.2]), [0.1, 0.1])
    # Constant throughput: CV 0. Alternate full / empty 50 ms bins: bins run from the
    # first packet's to the last's, 10 full and 9 empty, CV = sqrt((1 - p) / p) = sqrt(0.9).
    t = (np.arange(1000) + 0.5) * 0.001
    assert pm.throughput_cv(t, np.full(t.size, 1500.0)) == pytest.approx(0.0, abs=1e-9)
    on = (np.floor(t / 0.05) % 2) == 0
    assert pm.throughput_cv(t[on], np.full(on.sum(), 1500.0)) == pytest.approx(math.sqrt(0.9))
    assert pm.normalised_goodput(9.5, 10.0) == pytest.approx(0.95)


def _requests():
    # Two CCs on 8 Mbit/s, 10 ms; sizes 1 kB..1 MB; CUBIC has one SYN timeout and one tail RTO.
    rows = []
    for cc in ("prague", "cubic"):
        for i, size in enumerate([1000, 2000, 5000, 30_000, 300_000, 1_000_000]):
            transfer = size * 8 / 8e6
            fct = 0.020 + transfer + 0.001
            syn = 0
            if cc == "cubic" and i == 0:
                fct, syn = fct + 1.0, 1
            if cc == "cubic" and i == 1:
                fct += 0.3
            rows.append(
                dict(
                    source=0 if cc == "prague" else 1,
                    id=i,
                    size_bytes=size,
                    fct_s=fct,
                    base_rtt_s=0.010,
                    ideal_fct_s=0.010 + transfer,
                    efficiency=(0.010 + transfer) / fct,
                    cc=cc,
                    syn_retransmits=syn,
                )
            )
    rows.append(
        dict(
            source=1,
            id=9,
            size_bytes=7000,
            fct_s=None,
            base_rtt_s=0.01,
            ideal_fct_s=0.017,
            efficiency=math.nan,
            cc="cubic",
            syn_retransmits=0,
        )
    )
    return pd.DataFrame(rows)


def test_efficiency_in_log3_bins():
    bins = pm.efficiency_bins(_requests())
    prague = bins[bins["cc"] == "prague"].set_index("size_lo")
    # 1000 and 2000 B share the bin [729, 2187); 5000 B is in [2187, 6561).
    assert prague.loc[729.0, "count"] == 2
    assert prague.loc[2187.0, "count"] == 1
    assert (bins["mean"] <= 1.0).all() and (bins["p1"] <= bins["mean"]).all()
    assert bins["count"].sum() == 12  # the incomplete request is left out


def test_timeout_stripes():
    stripes = pm.timeout_stripes(_requests()).set_index("cc")
    assert stripes.loc["cubic", "syn_stripe"] == pytest.approx(1 / 6)
    assert stripes.loc["cubic", "tail_stripe"] == pytest.approx(1 / 6)
    assert stripes.loc["prague", "syn_stripe"] == 0 and stripes.loc["prague", "tail_stripe"] == 0


def test_connection_ordinals_and_delay_attribution():
    # Slot 2 carries source 0's request 0 (t = 1.0) then source 1's request 0 (t = 2.0): the
    # same id in two sources is two connections; slot 0 is a long flow (no request).
    requests = pd.DataFrame({"source": [0, 1], "id": [0, 0], "flow": [2, 2], "start_s": [1.0, 2.0],
                             "cc": ["prague", "cubic"]})  # fmt: skip
    times = [1.01 + 0.001 * k for k in range(14)] + [2.01, 2.02] + [1.005, 1.5]
    flows = [2] * 16 + [0, 0]
    classes = ["L"] * 14 + ["C", "C"] + ["L", "L"]
    delay = [0.1] * 11 + [2.0, 2.0, 2.0] + [5.0, 5.0] + [0.1, 3.0]
    delay[5] = 1.5  # a first-flight packet (ordinal 5) above 1 ms
    sojourn = pd.DataFrame({"time_s": times, "flow": flows, "class": classes, "sojourn_ms": delay})
    t = pm.connection_ordinals(sojourn, requests)
    web = t[t["flow"] == 2]
    assert web.loc[web["cc"] == "prague", "ordinal"].tolist() == list(range(14))
    assert web.loc[web["cc"] == "cubic", "ordinal"].tolist() == [0, 1]
    assert t.loc[t["flow"] == 0, "ordinal"].isna().all()
    found = pm.delay_attribution(sojourn, requests, queue="L", threshold_ms=1.0, flight=10)
    # L packets above 1 ms: ordinal 5 (first flight), 11, 12, 13 (later), the long flow's one.
    assert found["packets"] == 16 and found["above"] == pytest.approx(5 / 16)
    assert found["first_flight"] == pytest.approx(1 / 5) and found["later"] == pytest.approx(3 / 5)
    assert found["long_flows"] == pytest.approx(1 / 5)
    assert found["first_flight_of_all"] == pytest.approx(11 / 16)
