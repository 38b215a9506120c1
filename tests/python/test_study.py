"""Studies: expansion, seeds, validation before any run, resume after SIGKILL, truncated
files, and the local and Dask executors giving identical summaries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import cli_here, l4slab_command, requires_engine
from study_texts import SMALL_BOTTLENECK, base_text, small_flows
from l4slab.errors import ScenarioError

pytestmark = [requires_engine, pytest.mark.engine]

BASE = base_text({"duration": "1s", "bin": "100ms"}, SMALL_BOTTLENECK, small_flows("cubic", "cubic"))


def write_study(tmp_path: Path, header: str, factors: str = "", name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(header + BASE + factors, encoding="utf-8")
    return path


def load(tmp_path, header, factors=""):
    from l4slab.study.spec import load_study

    return load_study(write_study(tmp_path, header, factors))


# --- expansion --------------------------------------------------------------------------------


def test_product_zip_exclude_filter(tmp_path):
    spec = load(
        tmp_path,
        '[study]\nname = "x"\ntrials = 2\nexclude = [{"flows.1.ecn" = 1, "bottleneck.buffer" = "2bdp"}]\n',
        """
[factors]
"bottleneck.buffer" = ["0.5bdp", "1bdp", "2bdp"]
"flows.1.ecn" = [0, 1]
[zip]
pair = {"flows.0.cc" = ["cubic", "reno"], "flows.0.stop" = ["1s", "800ms"]}
""",
    )
    assert [f.path for f in spec.factors] == ["bottleneck.buffer", "flows.1.ecn", "flows.0.cc", "flows.0.stop"]
    # 3 buffers x 2 ecn x 2 zipped pairs = 12, minus the 2 excluded (2bdp, ecn 1)
    assert len(spec.points) == 10
    assert len(spec.runs) == 20
    pairs = {(p.values["flows.0.cc"], p.values["flows.0.stop"]) for p in spec.points}
    assert pairs == {("cubic", "1s"), ("reno", "800ms")}
    assert not any(p.values["bottleneck.buffer"] == "2bdp" and p.values["flows.1.ecn"] == 1 for p in spec.points)
    point = next(p for p in spec.points if p.values["flows.0.cc"] == "reno")
    assert point.config["flows"][0]["cc"] == "reno" and point.config["flows"][0]["stop_ns"] == 800_000_000
    assert len({r.id for r in spec.runs}) == 20

    filtered = load(
        tmp_path,
        '[study]\nfilter = [{"bottleneck.buffer" = ["1bdp", "2bdp"]}]\n',
        '[factors]\n"bottleneck.buffer" = ["0.5bdp", "1bdp", "2bdp"]\n',
    )
    assert [p.values["bottleneck.buffer"] for p in filtered.points] == ["1bdp", "2bdp"]


def test_pam_preset_exact_tc_strings(tmp_path):
    text = (
        BASE.replace('rate = "10Mbit"', 'rate = "100Mbit"')
        + '[factors]\n"bottleneck.qdisc" = "@pam2025.queues"\n"bottleneck.buffer" = ["0.5bdp", "2bdp", "8bdp"]\n'
    )
    path = tmp_path / "pam.toml"
    path.write_text("[study]\ntrials = 1\n" + text)
    from l4slab.study.spec import load_study

    spec = load_study(path)
    qdiscs = {
        (p.values["bottleneck.qdisc"], p.values["bottleneck.buffer"]): p.scenario["bottleneck"] for p in spec.points
    }
    assert len(qdiscs) == 27
    assert all("buffer" not in b for b in qdiscs.values())
    got = {key: b["qdisc"] for key, b in qdiscs.items()}
    assert got[("fifo", "0.5bdp")] == "bfifo limit 62500"
    assert got[("fifo", "8bdp")] == "bfifo limit 1000000"
    assert got[("pie", "0.5bdp")] == "pie limit 42 target 5ms noecn"
    assert got[("codel", "2bdp")] == "codel limit 167 target 5ms interval 100ms noecn"
    assert got[("fifo_ecn", "2bdp")] == "fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms"
    assert got[("codel_ecn", "8bdp")] == "codel limit 667 target 5ms interval 100ms ecn"
    assert got[("fq", "2bdp")] == "fq limit 167 flow_limit 167 ce_threshold 5ms"
    assert got[("fq_codel", "2bdp")] == "fq_codel limit 167 target 5ms interval 100ms ecn"
    assert got[("fq_codel_l4s", "2bdp")] == (
        "fq_codel limit 167 target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01"
    )
    for buffer in ("0.5bdp", "2bdp", "8bdp"):
        assert got[("dualpi2", buffer)] == "dualpi2 target 5ms"
    dualpi2 = next(p for p in spec.points if p.values["bottleneck.qdisc"] == "dualpi2")
    assert dualpi2.config["bottleneck"]["qdisc"]["limit_packets"] == 10_000

    subset = text.replace('"@pam2025.queues"', '{preset = "pam2025.queues", only = ["pie"], target = "1ms"}')
    path.write_text("[study]\n" + subset)
    spec = load_study(path)
    assert [p.scenario["bottleneck"]["qdisc"] for p in spec.points] == [
        "pie limit 42 target 1ms noecn",
        "pie limit 167 target 1ms noecn",
        "pie limit 667 target 1ms noecn",
    ]

    # `uptime`: the router's CoDel clock (include/net/codel.h:codel_get_time), appended to the
    # queues that read it only, so every trial runs one router instead of one drawn per seed
    clocked = text.replace(
        '"@pam2025.queues"', '{preset = "pam2025.queues", only = ["codel", "fq_codel_l4s", "fq", "pie"], uptime = "1000s"}'
    )
    path.write_text("[study]\n" + clocked.replace('["0.5bdp", "2bdp", "8bdp"]', '["2bdp"]'))
    spec = load_study(path)
    assert [p.scenario["bottleneck"]["qdisc"] for p in spec.points] == [
        "codel limit 167 target 5ms interval 100ms noecn uptime 1000s",
        "fq_codel limit 167 target 5ms interval 100ms ecn ce_threshold 1ms ce_threshold_selector 0x01/0x01 uptime 1000s",
        "fq limit 167 flow_limit 167 ce_threshold 5ms",
        "pie limit 167 target 5ms noecn",
    ]
    assert spec.points[0].config["bottleneck"]["qdisc"]["uptime_ns"] == 1_000_000_000_000
    path.write_text("[study]\n" + text.replace('"@pam2025.queues"', '{preset = "pam2025.queues", uptime = "soon"}'))
    with pytest.raises(ScenarioError, match=r"bottleneck\.qdisc.*\.uptime: "):
        load_study(path)


def test_trial_seeds_are_stable(tmp_path):
    from l4slab.study.spec import trial_seed

    # Fixed values: sha256-based, independent of machine, process and Python version.
    assert trial_seed(1, '[["flows.1.ecn",0]]', 0) == 6617156687218587746
    assert trial_seed(1, '[["flows.1.ecn",0]]', 1) == 5294500434828113109
    header = "[study]\nseed = 5\ntrials = 3\n"
    factors = '[factors]\n"flows.1.ecn" = [0, 1]\n'
    a = load(tmp_path, header, factors)
    b = load(tmp_path, header, factors)
    assert [r.seed for r in a.runs] == [r.seed for r in b.runs]
    assert [r.id for r in a.runs] == [r.id for r in b.runs]
    assert len({r.seed for r in a.runs}) == 6
    c = load(tmp_path, header.replace("seed = 5", "seed = 6"), factors)
    assert not {r.seed for r in a.runs} & {r.seed for r in c.runs}
    # A separate interpreter (different hash randomisation) derives the same seeds.
    code = "import sys; from l4slab.study.spec import load_study; print([r.seed for r in load_study(sys.argv[1]).runs])"
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.toml")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "123"},
                         check=True)  # fmt: skip
    assert json.loads(out.stdout) == [r.seed for r in c.runs]


@pytest.mark.parametrize(
    ("factors", "expected"),
    [
        ('"bottleneck.qdsic" = ["pfifo"]', "bottleneck.qdsic: unknown key (did you mean 'qdisc'?)"),
        ('"bottleneck.buffer" = ["1bdp", "2bpd"]', "bottleneck.buffer"),
        ('"flows.0.rtt" = ["10ms", "10"]', "flows[0].rtt: '10' is not a time with a unit"),
        ('"flows.5.cc" = ["reno"]', "flows.5.cc: no such entry"),
        ('"bottleneck.qdisc" = ["pie limit 10 tarrget 5ms"]', "bottleneck.qdisc"),
        ('"flows.1.ecn" = []', "factors.flows.1.ecn: [] is not a non-empty list"),
        ('"bottleneck.qdisc" = "@pam2025.nope"', "unknown preset '@pam2025.nope'"),
    ],
)
def test_malformed_study_is_one_line(tmp_path, factors, expected):
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, "[study]\n", f"[factors]\n{factors}\n")
    message = str(info.value)
    assert "\n" not in message
    assert expected in message


def test_malformed_study_rejected_before_any_run(tmp_path):
    from l4slab.cli import main

    bad_unit = write_study(tmp_path, "[study]\n", '[factors]\n"bottleneck.buffer" = ["1bdp", "2bdp", "3xbdp"]\n')
    empty = write_study(
        tmp_path, '[study]\nexclude = [{"flows.1.ecn" = [0, 1]}]\n', '[factors]\n"flows.1.ecn" = [0, 1]\n', "e.toml"
    )
    unknown_rule = write_study(tmp_path, '[study]\nexclude = [{"flows.9.ecn" = 1}]\n', "", "u.toml")
    for path, expected in ((bad_unit, "3xbdp"), (empty, "no points left"), (unknown_rule, "not a factor")):
        out = tmp_path / f"out-{path.stem}"
        result = cli_here("study", "run", str(path), "--out", str(out))
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("l4slab: error: ") and expected in lines[0]
        assert not out.exists()
    assert main(["study", "run", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "m")]) == 2


# --- running, resuming -----------------------------------------------------------------------


def _run_files(directory: Path) -> list[Path]:
    return sorted((directory / "runs").glob("*.parquet"))


def test_run_status_query_and_load(tmp_path, capsys):
    import l4slab.study as study
    from l4slab.cli import main

    path = write_study(tmp_path, '[study]\nname = "small"\nseed = 2\ntrials = 2\n',
                       '[factors]\n"flows.1.cc" = ["cubic", "reno"]\n')  # fmt: skip
    out = tmp_path / "out"
    report = study.run(path, out, jobs=2)
    assert (report.total, report.done, report.failed) == (4, 4, 0)
    assert len(_run_files(out)) == 4 and (out / "catalog.duckdb").exists() and (out / "plan.json").exists()
    data = study.load(out)
    assert sorted(data.runs["status"]) == ["done"] * 4
    assert set(data.runs["flows_1_cc"]) == {"cubic", "reno"}
    assert len(data.flows) == 8 and len(data.bottleneck) == 4
    goodput = data.summaries[(data.summaries.metric == "goodput_mbps") & (data.summaries.scope == "flow")]
    assert len(goodput) == 4 and (goodput["n"] == 2).all()
    row = goodput.iloc[0]
    assert row["ci95_low"] < row["mean"] < row["ci95_high"]
    series = data.series("flow_series")
    assert set(series["run_id"]) == set(data.runs["run_id"]) and "goodput_mbps" in series

    frame = study.query(out, "SELECT flows_1_cc, count(*) AS n FROM runs GROUP BY 1 ORDER BY 1")
    assert frame.to_dict("list") == {"flows_1_cc": ["cubic", "reno"], "n": [2, 2]}
    assert len(study.query(out, "SELECT * FROM bottleneck_series")) == 40

    assert main(["query", str(out), "SELECT count(*) AS n FROM flows", "--csv"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == ["n", "8"]
    assert main(["study", "status", str(out)]) == 0
    assert "flows.1.cc" in capsys.readouterr().out
    assert main(["query", str(out), "SELECT nope FROM runs"]) == 2

    again = study.run(path, out)
    assert (again.skipped, again.done) == (4, 0)


def test_catalog_parts_prepared_as_runs_finish_equal_a_rebuild_from_the_files(tmp_path, monkeypatch):
    """`study run` decodes each run's catalog part as the run finishes (store.Prepared); the
    catalog then equals one rebuilt from the files alone, and a part whose file changed on
    disk since is not used (the file is read and verified instead)."""
    import l4slab.study as study
    from l4slab.study import store

    path = write_study(tmp_path, '[study]\nname = "small"\nseed = 2\ntrials = 2\n',
                       '[factors]\n"flows.1.cc" = ["cubic", "reno"]\n')  # fmt: skip
    out = tmp_path / "out"
    used: list[int] = []
    real_take = store.Prepared.take

    def take(self, path, records):
        entry = real_take(self, path, records)
        used.append(entry is not None)
        return entry

    monkeypatch.setattr(store.Prepared, "take", take)
    study.run(path, out, jobs=2)
    assert used == [True] * 4, "every part prepared during the run is used"
    with_parts = study.load(out)
    store.rebuild_catalog(out)
    from_files = study.load(out)
    for name in ("runs", "flows", "bottleneck", "classes", "summaries"):
        pd.testing.assert_frame_equal(getattr(with_parts, name), getattr(from_files, name), check_exact=True)

    plan = store.load_plan(out)
    files = _run_files(out)
    prepared = store.Prepared(plan)
    for f in files:
        prepared.add(f.stem, f.read_bytes())
    files[0].write_bytes(files[0].read_bytes()[:-1] + b"x")  # changed after it was prepared
    used.clear()
    tables = store.collect(out, prepared)
    assert used == [False, True, True, True]
    assert files[0].stem not in set(tables["runs"].loc[tables["runs"]["status"] == "done", "run_id"])

    # A part in another form (pandas frames, as a worker of an earlier version sent them) is
    # not used: the part is decoded from the bytes, and the catalog is the same.
    prepared = store.Prepared(plan)
    for f in files[1:]:
        prepared.add(f.stem, f.read_bytes(), {name: pd.DataFrame({"x": [1]}) for name in store.SUMMARY_TABLES})
    used.clear()
    again = store.collect(out, prepared)
    assert used == [False, True, True, True]
    for name in ("runs", "flows", "bottleneck", "classes", "summaries"):
        pd.testing.assert_frame_equal(again[name], tables[name], check_exact=True)


def test_emit_jobs_and_run_one(tmp_path):
    import l4slab.study as study

    path = write_study(tmp_path, "[study]\ntrials = 3\n")
    out = tmp_path / "out"
    jobs = tmp_path / "jobs.txt"
    result = subprocess.run(l4slab_command("study", "run", str(path), "--out", str(out),
                             "--emit-jobs", str(jobs)), capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = jobs.read_text().splitlines()
    assert len(lines) == 3 and all(line.startswith("l4slab study run-one ") for line in lines)
    assert _run_files(out) == []
    first = lines[0].split()
    assert study.run_one(first[3], first[4]) is None
    assert len(_run_files(out)) == 1
    status = study.status(out)
    assert status.iloc[-1][["done", "pending", "failed"]].tolist() == [1, 2, 0]
    study.emit_jobs(path, jobs, out=out)
    assert len(jobs.read_text().splitlines()) == 2


def test_resume_after_sigkill(tmp_path):
    import l4slab.study as study
    from l4slab.study.store import read_run_meta

    path = write_study(tmp_path, "[study]\ntrials = 20\n", '[factors]\n"flows.1.cc" = ["cubic", "reno"]\n')
    out = tmp_path / "out"
    proc = subprocess.Popen(
        l4slab_command("study", "run", str(path), "--out", str(out), "--jobs", "1", "--no-progress"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_run_files(out)) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the pool's workers, started by this test
        except ProcessLookupError:
            pass
    finished = len(_run_files(out))
    print(f"killed after {finished} of 40 runs")
    assert 5 <= finished < 40, "the study should have been killed mid-way"
    assert not (out / "catalog.duckdb").exists()

    report = study.run(path, out, jobs=2)
    assert report.total == 40 and report.skipped == finished and report.done == 40 - finished
    files = _run_files(out)
    assert len(files) == 40
    plan = json.loads((out / "plan.json").read_text())
    assert sorted(f.stem for f in files) == sorted(r["id"] for r in plan["runs"])
    assert all(read_run_meta(f) is not None for f in files)
    runs = study.load(out).runs
    assert len(runs) == 40 and runs["run_id"].is_unique and set(runs["status"]) == {"done"}


def test_truncated_result_is_rerun(tmp_path):
    import l4slab.study as study
    from l4slab.study.store import read_run_meta

    path = write_study(tmp_path, "[study]\ntrials = 3\n")
    out = tmp_path / "out"
    study.run(path, out, jobs=1)
    files = _run_files(out)
    data = files[0].read_bytes()
    files[0].write_bytes(data[: len(data) // 2])
    assert read_run_meta(files[0]) is None
    assert study.status(out).iloc[-1]["pending"] == 1
    report = study.run(path, out, jobs=1)
    assert (report.skipped, report.done) == (2, 1)
    assert read_run_meta(files[0]) is not None
    assert len(study.load(out).runs) == 3


def _summaries(out: Path) -> pd.DataFrame:
    import l4slab.study as study

    frame = study.load(out).summaries
    return frame.sort_values(["point", "scope", "flow", "metric"], na_position="first", ignore_index=True)


def test_local_and_dask_executors_agree(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    import l4slab.study as study

    path = write_study(tmp_path, "[study]\ntrials = 2\n", '[factors]\n"flows.1.cc" = ["cubic", "reno"]\n')
    study.run(path, tmp_path / "local", jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        report = study.run(path, tmp_path / "dask", executor=address)
    assert report.done == 4
    pd.testing.assert_frame_equal(_summaries(tmp_path / "local"), _summaries(tmp_path / "dask"))
    local = sorted(f.name for f in _run_files(tmp_path / "local"))
    assert local == sorted(f.name for f in _run_files(tmp_path / "dask"))


def test_executor_spec_errors():
    from l4slab.study.executors import parse_executor

    assert parse_executor("dask://h:8786") == ("dask", "tcp://h:8786")
    assert parse_executor(None) == ("local", None)
    with pytest.raises(ScenarioError, match="--executor"):
        parse_executor("slurm")


def test_t_quantile():
    from l4slab.study.summary import t_quantile

    assert t_quantile(0.975, 1) == pytest.approx(12.7062047, abs=1e-6)
    assert t_quantile(0.975, 9) == pytest.approx(2.2621572, abs=1e-6)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.959966, abs=1e-5)


def test_unreadable_study_and_base_files_are_one_line_errors(tmp_path):
    from l4slab.study import load_study

    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes(b'[study]\nname = "caf\xe9"\n')
    no_base = tmp_path / "no-base.toml"
    no_base.write_text('base = "missing.toml"\n[study]\n')
    dir_base = tmp_path / "dir-base.toml"
    (tmp_path / "adir").mkdir()
    dir_base.write_text('base = "adir"\n[study]\n')
    cases = (
        (latin1, "latin1.toml: not a UTF-8 text file"),
        (no_base, "base: " + str(tmp_path / "missing.toml") + ": no such scenario file"),
        (dir_base, "is a directory, not a scenario file"),
    )
    for path, expected in cases:
        with pytest.raises(ScenarioError) as info:
            load_study(path)
        assert "\n" not in str(info.value) and expected in str(info.value), str(info.value)


def test_a_study_summarises_an_engine_result_field_it_names(tmp_path):
    """``[study] metrics`` takes the engine's result fields by name (schema ``metrics``)."""
    import l4slab.study as study
    from l4slab import schema

    assert "mean_payload_bytes" in schema.metric_names("flow_summary")
    path = write_study(tmp_path, '[study]\nmetrics = ["mean_payload_bytes"]\ntrials = 2\n')
    report = study.run(path, tmp_path / "out", jobs=1)
    assert (report.done, report.failed) == (2, 0)
    summaries = study.load(tmp_path / "out").summaries
    assert set(summaries["metric"]) == {"mean_payload_bytes"}
    assert sorted(summaries["flow"]) == [0, 1] and (summaries["n"] == 2).all()
    assert (summaries["mean"] == schema.tcp_flow_param("mss").default).all()  # full-sized segments


def test_a_study_accepts_every_summary_field_of_the_engine(tmp_path):
    import l4slab.study as study
    from l4slab import schema

    fields = [*schema.metric_names("flow_summary"), *schema.metric_names("bottleneck_summary")]
    path = write_study(tmp_path, f"[study]\nmetrics = {json.dumps(fields)}\n")
    assert study.run(path, tmp_path / "out", jobs=1).done == 1
    summarised = set(study.load(tmp_path / "out").summaries["metric"])
    assert {"mean_payload_bytes", "goodput_mbps", "drops"} <= summarised <= set(fields)
