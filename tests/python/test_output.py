"""Summary schema, DataFrames and atomic writing, from a results fixture (no engine needed)."""

import json
import math
import os

import l4slab.rundir as rundir
import numpy as np
import pandas as pd
import pytest
from conftest import is_nan, make_results
from l4slab.io import atomic_write, write_json, write_parquet
from l4slab.results import BackendRunResult, RunResult
from l4slab.rundir import write_run

SUMMARY_TOP_KEYS = {
    "scenario",
    "seed",
    "duration_s",
    "flows",
    "bottleneck",
    "packets_sent",
    "packets_delivered",
    "packets_dropped",
    "packets_in_flight",
    "jain_index",
    "engine_version",
    "model_version",
}
SUMMARY_FLOW_KEYS = {"id", "cc", "goodput_mbps", "mean_srtt_ms", "queuing_delay_ms", "retransmits"}
SUMMARY_BOTTLENECK_KEYS = {"utilisation", "sojourn_ms", "drops", "marks"}


def check_summary_schema(summary):
    """The fixed part of summary.json (docs/outputs.md); extra keys are allowed."""
    assert SUMMARY_TOP_KEYS <= summary.keys()
    assert isinstance(summary["scenario"], str) and isinstance(summary["seed"], int)
    for flow in summary["flows"]:
        assert SUMMARY_FLOW_KEYS <= flow.keys()
    assert SUMMARY_BOTTLENECK_KEYS <= summary["bottleneck"].keys()
    assert {"mean", "p50", "p99"} <= summary["bottleneck"]["sojourn_ms"].keys()
    json.dumps(summary, allow_nan=False)


def test_summary_schema(fake_result):
    summary = fake_result.summary
    check_summary_schema(summary)
    assert summary["scenario"] == "fixture" and summary["seed"] == 7 and summary["engine_version"] == "test"
    assert summary["packets_sent"] == 10_000 and summary["packets_data"] == 7_000 and summary["packets_acks"] == 3_000
    assert summary["bottleneck"]["qdisc_config"] == "bfifo limit 250000"
    assert summary["bottleneck"]["rate_mbps"] == 100
    assert [f["label"] for f in summary["flows"]] == ["reno", "cbr"]
    assert [f["group"] for f in summary["flows"]] == [0, 1]
    assert summary["flows"][1]["mean_srtt_ms"] is None


def test_frames(fake_result):
    flows = fake_result.flows
    assert list(flows["id"]) == [0, 1] and flows["fct_s"].dtype == "float64"
    series = fake_result.flow_series
    assert list(series.columns[:2]) == ["time_s", "flow"]
    assert {"goodput_mbps", "throughput_mbps", "srtt_ms", "rtt_ms", "cwnd", "retransmits", "drops", "marks"} <= set(
        series.columns
    )
    assert len(series) == 4 and series["flow"].tolist() == [0, 0, 1, 1]
    assert is_nan(series["srtt_ms"].iloc[0]) and series["retransmits"].dtype == "int64"
    bottleneck = fake_result.bottleneck_series
    assert list(bottleneck.columns) == [
        "time_s",
        "utilisation",
        "sojourn_ms",
        "backlog_bytes",
        "backlog_packets",
        "drops",
        "marks",
        "arrivals",
        "mark_prob",
        "drop_prob",
    ]
    assert bottleneck["drop_prob"].tolist() == pytest.approx([3 / 3350] * 2)
    assert bottleneck["mark_prob"].tolist() == [0.0, 0.0]
    assert fake_result.sojourn is None


def test_sojourn_frame(small_scenario):
    result = RunResult(small_scenario, small_scenario.resolve(), make_results(trace=True), 0.01, "test")
    assert list(result.sojourn.columns) == ["time_s", "flow", "class", "sojourn_ms"]


def test_write_run(tmp_path, fake_result):
    directory = write_run(fake_result, tmp_path / "run")
    names = sorted(p.name for p in directory.iterdir())
    assert names == sorted(
        [
            "scenario.json",
            "flows.parquet",
            "flow_series.parquet",
            "bottleneck_series.parquet",
            "meta.json",
            "summary.json",
        ]
    )
    summary = json.loads((directory / "summary.json").read_text())
    assert summary == fake_result.summary
    assert json.loads((directory / "scenario.json").read_text()) == fake_result.config
    assert "wall_s" in json.loads((directory / "meta.json").read_text())
    pd.testing.assert_frame_equal(pd.read_parquet(directory / "flow_series.parquet"), fake_result.flow_series)
    pd.testing.assert_frame_equal(
        pd.read_parquet(directory / "bottleneck_series.parquet"), fake_result.bottleneck_series
    )
    assert len(pd.read_parquet(directory / "flows.parquet")) == 2
    mode = (directory / "summary.json").stat().st_mode & 0o777
    assert mode == 0o666 & ~_umask()


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_stale_trace_is_removed(tmp_path, small_scenario, fake_result):
    traced = RunResult(small_scenario, small_scenario.resolve(), make_results(trace=True), 0.01, "test")
    write_run(traced, tmp_path)
    assert (tmp_path / "sojourn.parquet").exists()
    write_run(fake_result, tmp_path)
    assert not (tmp_path / "sojourn.parquet").exists()


def leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "data.bin"

    def failing_writer(path):
        with open(path, "wb") as handle:
            handle.write(b"half of the data")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(target, failing_writer)
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_atomic_write_keeps_previous_content(tmp_path):
    target = tmp_path / "summary.json"
    write_json(target, {"version": 1})

    def failing_writer(path):
        path.write_text('{"version": 2, "trunc')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, failing_writer)
    assert json.loads(target.read_text()) == {"version": 1}
    assert leftovers(tmp_path) == []


def test_parquet_writer_failing_midway(tmp_path, monkeypatch):
    target = tmp_path / "series.parquet"
    frame = pd.DataFrame({"a": range(1000)})

    def broken_to_parquet(self, path, **kwargs):
        with open(path, "wb") as handle:
            handle.write(b"PAR1 partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken_to_parquet)
    with pytest.raises(OSError):
        write_parquet(target, frame)
    assert not target.exists() and leftovers(tmp_path) == []


def test_write_run_failing_midway_leaves_no_summary(tmp_path, fake_result, monkeypatch):
    real_write_parquet = rundir.write_parquet

    def failing_on_series(path, frame):
        if path.name == "flow_series.parquet":
            raise OSError(28, "No space left on device")
        return real_write_parquet(path, frame)

    write_run(fake_result, tmp_path)  # an earlier complete run in the same directory
    monkeypatch.setattr(rundir, "write_parquet", failing_on_series)
    with pytest.raises(OSError):
        write_run(fake_result, tmp_path)
    assert not (tmp_path / "summary.json").exists()  # the directory is visibly incomplete
    assert leftovers(tmp_path) == []


def dualpi2_bottleneck():
    """A summary's bottleneck entry of a two-class qdisc (DualPI2), as results.rs writes it."""
    return {
        "rate_mbps": 100.0,
        "qdisc_config": "dualpi2 limit 10000 target 5ms",
        "sojourn_by_class": [
            {"class": "C", "sojourn_ms": {"count": 10, "mean": 4.5, "p50": 4.4, "p99": 9.9, "max": 10.5}},
            {"class": "L", "sojourn_ms": {"count": 5, "mean": 0.08, "p50": 0.07, "p99": 0.2, "max": None}},
        ],
        "qdisc": {
            "kind": "dualpi2",
            "sent_bytes": 1514 * 15,
            "sent_packets": 15,
            "drops": 1,
            "overlimits": 0,
            "requeues": 0,
            "marks": 3,
            "backlog_bytes": 3028,
            "backlog_packets": 2,
            "maxq_packets": 7,
            "extra": {"prob": 0.0125, "pkts_in_c": 11.0, "pkts_in_l": 5.0, "step_marks": 2.0, "drops": 9.0},
        },
    }


def test_tc_stats_lines():
    from l4slab.results import tc_stats_lines

    lines = tc_stats_lines(dualpi2_bottleneck(), per_line=3)
    assert lines[0] == "qdisc dualpi2 limit 10000 target 5ms (tc -s, whole run)"
    assert lines[1] == " Sent 22710 bytes 15 pkt (dropped 1, overlimits 0 requeues 0)"
    assert lines[2] == " backlog 3028b 2p requeues 0"
    assert lines[3] == " marks 3 maxq 7p"
    assert lines[4] == " prob 0.0125 pkts_in_c 11 pkts_in_l 5"
    assert lines[5] == " step_marks 2 drops 9"
    assert lines[6] == " class C: 10 pkts, sojourn mean/p50/p99/max 4.5/4.4/9.9/10.5 ms"
    assert lines[7] == " class L: 5 pkts, sojourn mean/p50/p99/max 0.08/0.07/0.2/– ms"
    # A single-queue qdisc has no per-class lines.
    single = {**dualpi2_bottleneck(), "sojourn_by_class": [{"class": "all", "sojourn_ms": {"count": 1}}]}
    assert not any(line.startswith(" class") for line in tc_stats_lines(single))


def test_classes_and_qdisc_stats_frames():
    from l4slab.results import classes_frame, qdisc_stats_series

    classes = classes_frame(dualpi2_bottleneck())
    assert classes["class"].tolist() == ["C", "L"]
    assert list(classes.columns) == ["class", "count", "mean_ms", "p50_ms", "p99_ms", "max_ms"]
    assert classes["count"].dtype == "int64" and is_nan(classes["max_ms"].iloc[1])
    stats = qdisc_stats_series(dualpi2_bottleneck())
    assert stats["sent_packets"] == 15 and stats["prob"] == 0.0125 and stats["pkts_in_l"] == 5.0
    assert stats["drops"] == 1 and stats["extra_drops"] == 9.0  # an extra never hides a counter


def test_result_exposes_classes_and_qdisc_stats(fake_result):
    assert fake_result.classes["class"].tolist() == ["all"]
    assert fake_result.qdisc_stats["kind"] == "bfifo" and fake_result.qdisc_stats["maxq_packets"] == 160


def series(bins, **columns):
    return pd.DataFrame({"time_s": [round(0.1 * i, 10) for i in range(bins)], **columns})


def test_rebin_bottleneck_series_to_one_second():
    from l4slab import rebin

    frame = series(
        25,
        utilisation=[1.0] * 10 + [0.5] * 10 + [1.0] * 5,
        sojourn_ms=[float("nan")] + [2.0] * 24,
        backlog_packets=list(range(25)),
        drops=[1] * 25,
        marks=[0] * 10 + [2] * 15,
        arrivals=[100] * 25,
    )
    frame["mark_prob"] = frame["marks"] / frame["arrivals"]
    out = rebin(frame, "1s")
    assert out["time_s"].tolist() == [0.0, 1.0, 2.0]
    assert out["utilisation"].tolist() == [1.0, 0.5, 1.0]
    assert out["sojourn_ms"].tolist() == [2.0, 2.0, 2.0]  # NaN bins are left out of the mean
    assert out["backlog_packets"].tolist() == [9, 19, 24]  # state at the end of the bin
    assert out["drops"].tolist() == [10, 10, 5] and out["arrivals"].tolist() == [1000, 1000, 500]
    assert out["mark_prob"].tolist() == [0.0, 0.02, 0.02]  # recomputed from the sums
    assert out["drop_prob"].tolist() == [0.01, 0.01, 0.01]
    assert list(out.columns[-2:]) == ["mark_prob", "drop_prob"]
    assert rebin(frame, 0.5)["drops"].tolist() == [5, 5, 5, 5, 5]


def test_rebin_flow_series_per_flow(fake_result):
    from l4slab import rebin

    out = rebin(fake_result.flow_series, "1s")
    assert out["flow"].tolist() == [0, 1] and out["time_s"].tolist() == [0.0, 0.0]
    assert out["retransmits"].tolist() == [2, 2] and out["goodput_mbps"].tolist() == [40.0, 40.0]
    assert out["srtt_ms"].tolist() == [12.0, 12.0]


@pytest.mark.parametrize("width, message", [("250ms", "is not a whole multiple"), ("1", "is not a time with a unit")])
def test_rebin_errors(width, message):
    from l4slab import ScenarioError, rebin

    with pytest.raises(ScenarioError, match=message):
        rebin(series(20, drops=[1] * 20), width, bin_s=0.1 if width == "1" else 0.2)


@pytest.mark.parametrize(
    ("values", "dtype", "expected"),
    [
        ([1, 2, 3], np.int64, [1, 2, 3]),
        ([-(2**63), 2**63 - 1], np.int64, [-(2**63), 2**63 - 1]),
        ([1, 2.5], np.float64, [1.0, 2.5]),
        ([1.0, float("nan")], np.float64, [1.0, float("nan")]),
        ([1, None, 2.0], np.float64, [1.0, float("nan"), 2.0]),
        ([True, 2], np.float64, [1.0, 2.0]),
        ([True, False], np.float64, [1.0, 0.0]),
        (["CRUISE", ""], object, ["CRUISE", ""]),
        ([], np.float64, []),
    ],
)
def test_series_column_types(values, dtype, expected):
    # results._column: numpy's inference is the fast path for all-int and int/float
    # series; every other case keeps the checked rules (bools and None → float64).
    from l4slab.results import _column

    got = _column(values)
    assert got.dtype == dtype
    for g, e in zip(got.tolist(), expected, strict=True):
        assert (g == e) or (isinstance(e, float) and math.isnan(e) and math.isnan(g))


def test_a_backend_result_names_its_backend_and_writes_its_meta_before_the_summary(tmp_path, fake_result):
    """A result of another backend with no block of its own (``BackendRunResult``'s default):
    the summary says the backend and carries its meta as the block, NaN as null; the meta file
    is written, and ``summary.json`` (written last) says the run is complete."""
    import dataclasses
    from typing import ClassVar

    @dataclasses.dataclass
    class Probe(BackendRunResult):
        backend: ClassVar[str] = "probe"
        block: ClassVar[str] = "probe_block"
        meta_file: ClassVar[str] = "probe_meta.json"

    fields = {f.name: getattr(fake_result, f.name) for f in dataclasses.fields(RunResult)}
    result = Probe(**fields, meta={"ticks": 3, "lost": float("nan")})
    summary = result.summary
    assert summary["backend"] == "probe" and summary["probe_block"] == {"ticks": 3, "lost": None}
    directory = result.write(tmp_path / "run")
    assert json.loads((directory / "probe_meta.json").read_text()) == {"ticks": 3, "lost": None}
    assert json.loads((directory / "summary.json").read_text())["probe_block"]["ticks"] == 3
