"""l4slab.analysis.figures: every figure renders and save() writes PNG + SVG atomically."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from l4slab.analysis import figures as fg
from l4slab.analysis.published import QUEUE_ORDER, load_published
from matplotlib.figure import Figure


def assert_saved(fig: Figure, stem) -> None:
    paths = fg.save(fig, stem)
    assert [p.suffix for p in paths] == [".png", ".svg"]
    for path in paths:
        assert path.exists() and path.stat().st_size > 0
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in paths[1].read_bytes()[:2000]
    leftovers = [p for p in paths[0].parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def test_heatmap_of_published_table(tmp_path):
    fig = fg.pam_heatmap(load_published(), classic="cubic_ecn", title="Prague vs CUBIC (ECN)")
    cell_texts = texts(fig)
    assert len(cell_texts) == 9 * 5
    assert "90.3 (4.6)" in cell_texts
    assert "42.9 (52.1)" in cell_texts
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(QUEUE_ORDER)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0.5", "1", "2", "4", "8"]
    assert len(fig.axes) == 2  # the heatmap and its colorbar
    assert_saved(fig, tmp_path / "figs" / "pam_cubic_ecn")


def test_heatmap_with_delays_and_missing_cells(tmp_path):
    cells = load_published()
    cells = cells[(cells["classic"] == "cubic") & ~((cells["queue"] == "pie") & (cells["buffer_bdp"] == 1.0))]
    fig = fg.pam_heatmap(cells, delays=True)
    cell_texts = texts(fig)
    assert "41.9 (53.1)\n0.3/5.2 ms" in cell_texts
    assert "–" in cell_texts  # pie, 1 BDP removed
    assert_saved(fig, tmp_path / "with_delays")


def test_heatmap_needs_one_table():
    with pytest.raises(ValueError, match="classic"):
        fg.pam_heatmap(load_published())


def test_cell_text():
    assert fg.cell_text(90.25, 4.64) == "90.2 (4.6)" or fg.cell_text(90.25, 4.64) == "90.3 (4.6)"
    assert fg.cell_text(1.0, 2.0, 0.31, 5.24) == "1.0 (2.0)\n0.3/5.2 ms"
    assert fg.cell_text(float("nan"), 1.0) == "–"


def trials_flows() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for trial in range(5):
        for label, mean in (("prague", 42.0), ("cubic", 52.0)):
            rows.append({"trial": trial, "label": label, "queue": "dualpi2", "goodput_mbps": mean + rng.normal()})
            rows.append({"trial": trial, "label": label, "queue": "fq_codel", "goodput_mbps": 47.0 + rng.normal()})
    return pd.DataFrame(rows)


def test_flow_bars_from_trials_with_hue(tmp_path):
    fig = fg.flow_bars(trials_flows(), x="label", hue="queue", capacity_mbps=100.0)
    ax = fig.axes[0]
    assert len(ax.patches) == 4
    heights = sorted(round(p.get_height()) for p in ax.patches)
    assert heights == [42, 47, 47, 52]
    assert any(line.get_linestyle() == "--" and line.get_ydata()[0] == 50.0 for line in ax.lines)
    assert_saved(fig, tmp_path / "bars")


def test_flow_bars_from_aggregated():
    frame = pd.DataFrame({"label": ["a", "b", "c"], "goodput_mbps": [30.0, 30.0, 40.0], "goodput_mbps_ci": [1, 2, 3]})
    fig = fg.flow_bars(frame, fair_mbps=33.3)
    assert [p.get_height() for p in fig.axes[0].patches] == [30.0, 30.0, 40.0]


def test_ccdf_plot_samples_histogram_and_trace(tmp_path):
    rng = np.random.default_rng(2)
    fig = fg.ccdf_plot(
        {"L": rng.exponential(0.3, 2000), "C": rng.exponential(5.0, 2000), "hist": ([0, 1, 2, 4], [50, 30, 20])}
    )
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert len(ax.lines) == 3
    for line in ax.lines:
        assert (np.asarray(line.get_ydata()) > 0).all()
    assert_saved(fig, tmp_path / "ccdf")
    trace = pd.DataFrame({"class": [0] * 50 + [1] * 50, "sojourn_ms": rng.exponential(1.0, 100)})
    assert len(fg.ccdf_plot(trace, by="class", logx=True).axes[0].lines) == 2


def series_trials() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    frames = []
    for trial in range(4):
        for flow in (0, 1):
            time = np.arange(0, 5, 0.5)
            frames.append(pd.DataFrame({"trial": trial, "flow": flow, "time_s": time,
                                        "goodput_mbps": 40 + 10 * flow + rng.normal(size=time.size)}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def test_time_series_mean_and_band(tmp_path):
    series = series_trials()
    fig = fg.time_series(series, value="goodput_mbps", group="flow")
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    expected = series[series["flow"] == 1].groupby("time_s")["goodput_mbps"].mean().to_numpy()
    assert np.asarray(ax.lines[1].get_ydata()) == pytest.approx(expected)
    assert len(ax.collections) == 2  # one CI band per flow
    assert_saved(fig, tmp_path / "series")
    single = fg.time_series(series[series["flow"] == 0], group=None)
    assert len(single.axes[0].lines) == 1
