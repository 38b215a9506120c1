"""Shared fixtures: a results dict shaped exactly like the engine's results.rs, the engine
marker, and the argv that runs the ``l4slab`` command in a new process."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
from l4slab.scenario import scenario_from_toml


def l4slab_command(*args: str) -> list[str]:
    """The argv that runs ``l4slab ARGS`` in a new process of this interpreter."""
    return [sys.executable, "-m", "l4slab", *args]


def cli(*args: str, timeout: float = 120) -> "subprocess.CompletedProcess":
    """``l4slab ARGS`` in a new interpreter, as a user runs it."""
    import subprocess

    return subprocess.run(l4slab_command(*args), capture_output=True, text=True, timeout=timeout)


def cli_in_process(capsys, *args: str) -> "subprocess.CompletedProcess":
    """``l4slab ARGS`` in this process (a new interpreter costs seconds on a busy machine)."""
    import subprocess

    from l4slab.cli import main as cli_main

    capsys.readouterr()
    try:
        code = cli_main(list(args))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)


def cli_here(*args: str, cwd=None) -> "subprocess.CompletedProcess":
    """``l4slab ARGS`` in this process, run from ``cwd``, its stdout and stderr captured:
    :func:`l4slab.cli.main` answers as the console script does (it catches every error
    into one line and an exit status) without a new interpreter's seconds of imports."""
    import contextlib
    import io
    import os
    import subprocess

    from l4slab.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli_main(list(args))
            except SystemExit as exit_:
                code = exit_.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def python_c(code: str, *args: str, timeout: float = 120) -> "subprocess.CompletedProcess":
    """``python -c CODE ARGS`` in a new interpreter of this environment (what a fresh
    import costs and loads), its output captured."""
    import subprocess

    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)


def report_dir_fixture(study_text: str, name: str, timeout: float = 900):
    """A module fixture ``report_dir``: ``study_text`` run and reported once per test module
    (:func:`run_and_report`), in a temporary directory named after ``name``."""

    @pytest.fixture(scope="module")
    def report_dir(tmp_path_factory):
        pytest.importorskip("l4slab._core")
        return run_and_report(tmp_path_factory.mktemp(name), study_text, timeout=timeout)

    return report_dir


def run_and_report(root, study_text: str, timeout: float = 900):
    """Write ``study_text`` as ``root/study.toml``, run it into ``root/out`` and write its
    report with the CLI, as a user would; return the report directory."""
    import subprocess
    from pathlib import Path

    (root / "study.toml").write_text(study_text, encoding="utf-8")
    out = root / "out"
    repo = Path(__file__).resolve().parents[2]
    for args in (("study", "run", str(root / "study.toml"), "--out", str(out), "--no-progress"),
                 ("study", "report", str(out))):  # fmt: skip
        done = subprocess.run(l4slab_command(*args), capture_output=True, text=True, cwd=repo, timeout=timeout)
        assert done.returncode == 0, done.stderr
    return out / "report"


def one_line_error(proc: "subprocess.CompletedProcess", code: int = 2) -> str:
    """The one ``l4slab: error:`` line a refused command prints (warnings aside), with ``code``."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("l4slab: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("l4slab: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return lines[0]


def recording_popen(monkeypatch) -> list:
    """Every process ``subprocess.Popen`` starts while the test runs (e.g. a guest's UML
    process, whose group a test checks is gone afterwards)."""
    import subprocess

    started: list = []
    popen = subprocess.Popen

    def recording(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", recording)
    return started


def emulation_skip_reason() -> str | None:
    """Why the emulated (real-time, root) tests cannot run here, or None: they need Linux
    network namespaces, root, /dev/net/tun, iperf3 and the emulator (binary or extension)."""
    import os
    import shutil

    if not sys.platform.startswith("linux"):
        return f"emulated runs need Linux network namespaces ({sys.platform})"
    if os.geteuid() != 0:
        return "emulated runs need root (network namespaces, TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return "emulated runs need /dev/net/tun"
    if not shutil.which("iperf3"):
        return "emulated runs need iperf3 (apt-get install iperf3)"
    from l4slab.emulate.preflight import EmulationRefused, binary_argv

    try:
        binary_argv()
    except EmulationRefused as err:
        return str(err)
    return None


def engine_available() -> bool:
    try:
        return importlib.util.find_spec("l4slab._core") is not None and __import__("l4slab._core") is not None
    except ImportError:
        return False


requires_engine = pytest.mark.skipif(not engine_available(), reason="l4slab._core (the Rust engine) is not built")

SMALL_SCENARIO = """
name = "fixture"
duration = "1s"
seed = 7
bin = "500ms"
[bottleneck]
rate = "100Mbit"
qdisc = "bfifo"
buffer = "2bdp"
[[flows]]
cc = "reno"
rtt = "10ms"
[[flows]]
kind = "udp"
rate = "10%"
rtt = "10ms"
label = "cbr"
"""


def _delay_stats(count=10, mean=1.5):
    return {"count": count, "mean": mean, "p50": 1.0, "p90": 2.0, "p99": 3.0, "p999": 3.5, "max": 4.0}


def _flow_summary(flow_id, kind, cc):
    return {
        "id": flow_id,
        "kind": kind,
        "cc": cc,
        "base_rtt_ms": 10.0,
        "goodput_mbps": 40.0 + flow_id,
        "throughput_mbps": 42.0 + flow_id,
        "mean_srtt_ms": 12.5 if kind == "tcp" else None,  # serde writes NaN as null
        "queuing_delay_ms": 2.5 if kind == "tcp" else None,
        "mean_rtt_ms": 12.7 if kind == "tcp" else None,
        "retransmits": 3,
        "rto_count": 0,
        "tlp_count": 1,
        "recoveries": 2,
        "bytes_delivered": 5_000_000,
        "packets_sent": 3500,
        "drops": 3,
        "marks": 0,
        "acks_sent": 1700 if kind == "tcp" else 0,
        "fct_s": None,
        "final_cwnd": 20 if kind == "tcp" else 0,
    }


def _flow_series(bins):
    return {
        "goodput_mbps": [40.0] * bins,
        "throughput_mbps": [42.0] * bins,
        "srtt_ms": [None] + [12.0] * (bins - 1),
        "rtt_ms": [12.5] * bins,
        "cwnd": [10.0] * bins,
        "retransmits": [1] * bins,
        "drops": [1] * bins,
        "marks": [0] * bins,
    }


def make_results(seed=7, bins=2, trace=False):
    """A results dict following crates/l4slab-core/src/results.rs field by field."""
    results = {
        "duration_s": 1.0,
        "warmup_s": 0.0,
        "bin_s": 0.5,
        "seed": seed,
        "flows": [_flow_summary(0, "tcp", "reno"), _flow_summary(1, "udp", "udp")],
        "bottleneck": {
            "utilisation": 0.97,
            "sojourn_ms": _delay_stats(),
            "drops": 6,
            "marks": 0,
            "sojourn_by_class": [{"class": "all", "sojourn_ms": _delay_stats()}],
            "qdisc": {
                "kind": "bfifo",
                "sent_bytes": 10_000_000,
                "sent_packets": 6700,
                "drops": 6,
                "overlimits": 0,
                "requeues": 0,
                "marks": 0,
                "backlog_bytes": 15140,
                "backlog_packets": 10,
                "maxq_packets": 160,
                "extra": {},
            },
        },
        "packets": {"sent": 10_000, "delivered": 9_984, "dropped": 6, "in_flight": 10, "data": 7_000, "acks": 3_000},
        "events": 25_000,
        "time_s": [0.5 * i for i in range(bins)],
        "flow_series": [_flow_series(bins), _flow_series(bins)],
        "bottleneck_series": {
            "utilisation": [0.95] * bins,
            "sojourn_ms": [None] + [1.5] * (bins - 1),
            "backlog_bytes": [1514] * bins,
            "backlog_packets": [1] * bins,
            "drops": [3] * bins,
            "marks": [0] * bins,
            "arrivals": [3350] * bins,
        },
        "sojourn_trace": None,
        "jain_index": 0.99,
    }
    if trace:
        results["sojourn_trace"] = {"time_s": [0.1, 0.2], "flow": [0, 1], "class": [0, 0], "sojourn_ms": [1.0, 2.0]}
    return results


@pytest.fixture
def small_scenario():
    return scenario_from_toml(SMALL_SCENARIO)


@pytest.fixture
def fake_result(small_scenario):
    """A RunResult built without the engine, from the fixture results."""
    from l4slab.results import RunResult

    return RunResult(
        scenario=small_scenario,
        config=small_scenario.resolve(),
        raw=make_results(),
        wall_s=0.01,
        engine_version="test",
    )


def is_nan(value):
    return isinstance(value, float) and math.isnan(value)
