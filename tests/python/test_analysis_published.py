"""l4slab.analysis.published: the PAM 2025 tables and compare()."""

from __future__ import annotations

import numpy as np
import pytest
from l4slab.analysis import published as pub


def test_table_shape_and_keys():
    table = pub.load_published()
    assert len(table) == 2 * 9 * 5 == 90
    assert not table.duplicated(["queue", "buffer_bdp", "classic"]).any()
    assert tuple(dict.fromkeys(table["queue"])) == pub.QUEUE_ORDER
    assert sorted(set(table["buffer_bdp"])) == list(pub.BUFFERS_BDP)
    assert set(table["classic"]) == set(pub.CLASSICS)
    assert set(table["l4s_cc"]) == {"prague"}
    for column in pub.VALUE_COLUMNS:
        assert table[column].notna().all() and (table[column] >= 0).all()
    # every cell of the paper: Prague + CUBIC stay within the 100 Mbit/s link
    assert ((table["l4s_mbps"] + table["classic_mbps"]) < 100.0).all()


@pytest.mark.parametrize(
    ("queue", "buffer", "classic", "values"),
    [
        ("fifo_ecn", 2, "cubic_ecn", (90.3, 4.6, 4.7, 9.4)),
        ("dualpi2", 0.5, "cubic", (41.9, 53.1, 0.3, 5.2)),
        ("fifo", 0.5, "cubic", (40.4, 53.5, 2.8, 2.9)),
        ("fq", 8, "cubic", (46.6, 48.8, 4.2, 130.4)),
        ("codel_ecn", "1bdp", "cubic_ecn", (74.9, 19.9, 6.5, 7.7)),
        ("dualpi2", 8, "cubic_ecn", (43.5, 51.6, 0.3, 5.3)),
        ("fifo_ecn", 4, "cubic", (0.2, 95.3, 32.8, 33.3)),
    ],
)
def test_spot_checked_cells(queue, buffer, classic, values):
    cell = pub.published_cell(queue, buffer, classic)
    assert tuple(cell[list(pub.VALUE_COLUMNS)]) == pytest.approx(values)


def test_published_harm_labels():
    table = pub.load_published().set_index(["queue", "buffer_bdp", "classic"])
    assert table.loc[("fifo_ecn", 2.0, "cubic"), "harm"] == "harmed"
    assert table.loc[("fifo_ecn", 2.0, "cubic_ecn"), "harm"] == "harmful"
    assert table.loc[("codel_ecn", 1.0, "cubic_ecn"), "harm"] == "neutral"  # 74.9 %
    assert table.loc[("codel_ecn", 2.0, "cubic"), "harm"] == "harmful"
    assert table.loc[("fifo_ecn", 0.5, "cubic"), "harm"] == "neutral"
    assert (table.xs("dualpi2", level="queue")["harm"] == "neutral").all()
    counts = table["harm"].value_counts().to_dict()
    assert counts == {"neutral": 76, "harmful": 10, "harmed": 4}


def test_unknown_cell_raises():
    with pytest.raises(KeyError):
        pub.published_cell("red", 2, "cubic")


def test_normalise_buffer():
    assert pub.normalise_buffer("2bdp") == 2.0
    assert pub.normalise_buffer("0.5BDP") == 0.5
    assert pub.normalise_buffer(4) == 4.0
    with pytest.raises(ValueError):
        pub.normalise_buffer("250000B")


def test_compare_identical_is_perfect():
    published = pub.load_published()
    result = pub.compare(published)
    assert len(result.table) == 90
    assert result.summary["harm_agreement"] == 1.0
    assert result.summary["tput_mae_mbps"] == 0.0
    assert result.table["queue"].iloc[0] == "fifo"


def test_compare_perturbed_copy():
    simulated = pub.load_published()[["queue", "buffer_bdp", "classic", *pub.VALUE_COLUMNS]].copy()
    simulated["buffer_bdp"] = simulated["buffer_bdp"].map(lambda b: f"{b:g}bdp")  # as a study factor
    simulated["l4s_mbps"] += 1.0
    simulated["classic_mbps"] -= 3.0
    simulated["l4s_qdelay_ms"] *= 2.0
    # flip two labels: fifo_ecn 2 BDP no-ECN harmed → neutral, dualpi2 1 BDP no-ECN neutral → harmful
    flip1 = (simulated["queue"] == "fifo_ecn") & (simulated["buffer_bdp"] == "2bdp") & (simulated["classic"] == "cubic")
    flip2 = (simulated["queue"] == "dualpi2") & (simulated["buffer_bdp"] == "1bdp") & (simulated["classic"] == "cubic")
    simulated.loc[flip1, "l4s_mbps"] = 45.0
    simulated.loc[flip2, "l4s_mbps"] = 85.0
    simulated = simulated[simulated["queue"] != "pie"].iloc[:-5]  # missing cells are left out (inner join)
    result = pub.compare(simulated)
    table = result.table.set_index(["queue", "buffer_bdp", "classic"])
    assert len(table) == 75
    assert result.summary["cells"] == 75
    assert "pie" not in set(result.table["queue"])
    assert result.summary["harm_agreement"] == pytest.approx(73 / 75)
    assert not table.loc[("fifo_ecn", 2.0, "cubic"), "harm_agree"]
    assert table.loc[("fifo_ecn", 2.0, "cubic"), "harm_sim"] == "neutral"
    assert table.loc[("dualpi2", 1.0, "cubic"), "harm_sim"] == "harmful"
    assert table.loc[("fifo", 1.0, "cubic"), "l4s_mbps_diff"] == pytest.approx(1.0)
    assert table.loc[("fifo", 1.0, "cubic"), "tput_abs_err_mbps"] == pytest.approx(2.0)
    assert table.loc[("fifo", 1.0, "cubic"), "l4s_mbps_sim"] == pytest.approx(46.9)
    assert table.loc[("fifo", 1.0, "cubic"), "l4s_mbps_pub"] == pytest.approx(45.9)
    assert result.summary["classic_mbps_mae"] == pytest.approx(3.0)
    assert result.summary["classic_mbps_bias"] == pytest.approx(-3.0)
    assert result.summary["l4s_qdelay_ms_bias"] > 0
    assert result.summary["classic_qdelay_ms_mae"] == 0.0


def test_compare_partial_columns():
    simulated = pub.load_published()[["queue", "buffer_bdp", "classic", "l4s_mbps"]].head(3)
    result = pub.compare(simulated)
    assert result.table["classic_mbps_sim"].isna().all()
    assert np.isnan(result.summary["tput_mae_mbps"])
    assert result.summary["harm_agreement"] == 1.0
