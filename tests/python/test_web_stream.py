"""Streamed web records: a run with traffic sources streams its per-request
and closed-flow records through spill files into Parquet row groups, never holding
them all as JSON or dicts; ``RunResult.requests`` / ``flow_records`` and the run
directory's files are the same as the in-memory path gives."""

import gc
import json

import l4slab
import pandas as pd
import pyarrow.parquet as pq
from l4slab import engine, records
from l4slab.records import RecordSpill, requests_frame
from l4slab.results import flows_frame
from l4slab.scenario import scenario_from_toml

# Two web sources at 150 requests/s each for 8 s: about 1 200 requests each, more than
# one engine chunk (RECORD_CHUNK = 1024) per source and for the closed flows.
STREAM_TOML = """
name = "web-stream"
duration = "8s"
[bottleneck]
rate = "60Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "cubic"
rtt = "10ms"
[[sources]]
kind = "web"
rate = "150/s"
cc = "prague"
rtt = "10ms"
ecn = "accecn"
receiver_ecn = "accecn"
sizes = "pareto(0.9, 1000B, 100000B)"
[[sources]]
kind = "web"
rate = "150/s"
cc = "cubic"
rtt = "10ms"
sizes = "pareto(0.9, 1000B, 100000B)"
"""


def test_streamed_records_equal_the_in_memory_frames_and_reach_the_run_directory(tmp_path, monkeypatch):
    # Row groups of 1 000 rows here (16 384 by default), to see the file written in parts.
    monkeypatch.setattr(records, "ROW_GROUP_ROWS", 1000)
    scenario = scenario_from_toml(STREAM_TOML)
    result = l4slab.run(scenario)
    assert result.records is not None
    # The results JSON no longer carries them.
    assert "requests" not in result.raw and "flow_records" not in result.raw
    raw, _ = engine.simulate(scenario.resolve())
    assert len(raw["requests"]) > 2 * 1024 and len(raw["flow_records"]) > 2 * 1024
    pd.testing.assert_frame_equal(result.requests, requests_frame(raw["requests"]))
    pd.testing.assert_frame_equal(result.flow_records, flows_frame(raw["flow_records"]))
    # Both sources, each in arrival order, source 0 first (as the in-memory table lists them).
    assert list(result.requests.groupby("source", sort=False).ngroup().drop_duplicates()) == [0, 1]
    # The Parquet file is written a row group at a time (each of whole engine chunks).
    assert pq.ParquetFile(result.records_file("requests.parquet")).num_row_groups >= 2

    out = result.write(tmp_path / "run")
    pd.testing.assert_frame_equal(pd.read_parquet(out / "requests.parquet"), result.requests)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "flow_records.parquet"), result.flow_records)
    assert json.loads((out / "summary.json").read_text())["scenario"] == "web-stream"
    assert not list(out.glob(".*.tmp"))

    # The spill directory goes with the result.
    spill = result.records.path
    assert spill.is_dir() and not list(spill.glob("*.jsonl"))
    del result
    gc.collect()
    assert not spill.exists()


def test_a_run_without_sources_keeps_its_records_in_memory_and_a_spill_cleans_up():
    result = l4slab.run(scenario_from_toml(STREAM_TOML.split("[[sources]]")[0]))
    assert result.records is None and result.requests is None and result.flow_records is None
    spill = RecordSpill()
    (spill.path / "requests-0.jsonl").write_text("[]\n")
    spill.convert(flows_frame)
    assert spill.parquet("requests.parquet") is None
    spill.cleanup()
    assert not spill.path.exists()


def test_a_copied_result_keeps_its_records_and_a_removed_spill_is_an_error():
    """A deep-copied RunResult, or a pickled record spill (as a worker process returns
    it), carries its records in a spill of its own, so it outlives the original;
    reading a spill that was removed is an error, not a silent None."""
    import copy
    import pickle

    import pytest

    scenario = scenario_from_toml(STREAM_TOML.replace('duration = "8s"', 'duration = "2s"'))
    result = l4slab.run(scenario)
    expected = result.requests
    assert expected is not None and len(expected) > 100
    pickled = pickle.loads(pickle.dumps(result.records))
    # The whole result pickles too (a process pool returns it): its scenario holds the web source model.
    whole = pickle.loads(pickle.dumps(result))
    assert whole.scenario == result.scenario and whole.scenario.sources[0].kind == "web"
    pd.testing.assert_frame_equal(whole.requests, expected)
    whole.records.cleanup()
    del whole
    copied = copy.deepcopy(result)
    assert len({pickled.path, result.records.path, copied.records.path}) == 3
    result.records.cleanup()
    with pytest.raises(RuntimeError, match="removed"):
        result.records_file("requests.parquet")
    del result
    gc.collect()
    pd.testing.assert_frame_equal(requests_frame_from(pickled), expected)
    pd.testing.assert_frame_equal(copied.requests, expected)
    paths = [pickled.path, copied.records.path]
    del pickled, copied
    gc.collect()
    assert not any(p.exists() for p in paths)


def requests_frame_from(spill: RecordSpill) -> pd.DataFrame:
    return pd.read_parquet(spill.parquet("requests.parquet"))
