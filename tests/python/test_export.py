"""``l4slab export``: flent data that flent itself loads and plots, and iperf3 -J style JSON."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from l4slab.cli import main
from l4slab.runner import run
from l4slab.scenario import scenario_from_toml

SCENARIO = """
name = "export me"
duration = "4s"
bin = "200ms"
[bottleneck]
rate = "20Mbit"
qdisc = "fq_codel"
[[flows]]
cc = "prague"
rtt = "10ms"
label = "L4S flow"
[[flows]]
cc = "cubic"
rtt = "20ms"
[[flows]]
kind = "udp"
rate = "1Mbit"
rtt = "10ms"
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("export") / "run"
    result = run(scenario_from_toml(SCENARIO))
    result.write(out)
    return out, result


def _flent_cli() -> list[str]:
    exe = shutil.which("flent", path=os.path.dirname(sys.executable)) or shutil.which("flent")
    return [exe] if exe else [sys.executable, "-m", "flent"]


def test_flent_loads_the_export_with_the_run_values(run_dir):
    pytest.importorskip("flent")
    from flent import resultset

    out, result = run_dir
    assert main(["export", "--flent", str(out)]) == 0
    path = out / "export_me.flent.gz"
    rs = resultset.load(str(path))
    assert rs.meta("NAME") == "rrul_be_nflows"
    assert rs.meta("TEST_PARAMETERS") == {"upload_streams": "2", "download_streams": "0"}
    # One series per TCP flow with its goodput per bin; the UDP flow is not a TCP stream.
    series = result.flow_series
    for n, flow in ((1, 0), (2, 1)):
        got = rs.series(f"TCP upload BE::{n}")
        want = series[series["flow"] == flow]["goodput_mbps"].tolist()
        assert got == pytest.approx(want)
    assert rs.meta("SERIES_META")["TCP upload BE::1"]["l4slab_label"] == "L4S flow"
    total = [a + b for a, b in zip(rs.series("TCP upload BE::1"), rs.series("TCP upload BE::2"), strict=True)]
    assert rs.series("TCP upload sum") == pytest.approx(total)
    # The ICMP ping a user would have run: base RTT + the bottleneck's sojourn, never below the base.
    assert min(v for v in rs.series("Ping (ms) ICMP") if v is not None) >= 10.0
    assert len(rs.x_values) == len(series[series["flow"] == 0])


def test_flent_places_a_short_run_inside_its_plots_cutoff(run_dir):
    """flent's CDF and box plots (``ping_cdf``, ...) keep only DELAY..TOTAL_LENGTH-DELAY of a
    test (``cutoff: (DELAY, -DELAY)`` in its test files): the 4-s run sits there whole, as the
    load of a flent test does, so its ping CDF has every sample."""
    pytest.importorskip("flent")
    from flent import resultset
    from flent.settings import parser

    out, result = run_dir
    main(["export", "--flent", str(out)])
    rs = resultset.load(str(out / "export_me.flent.gz"))
    delay = parser.get_default("DELAY")
    assert rs.meta("TOTAL_LENGTH") == rs.meta("LENGTH") + 2 * delay == 4 + 2 * delay
    samples = [r["t"] - rs.t0 for r in rs.raw_values["Ping (ms) ICMP"]]
    assert len(samples) == 20
    assert delay <= min(samples) and max(samples) <= rs.meta("TOTAL_LENGTH") - delay
    # fq_codel gives the echo a sparse queue of its own: the ping is the base RTT.
    assert {r["val"] for r in rs.raw_values["Ping (ms) ICMP"]} == {10.0}


PING_SCENARIO = """
name = "ping"
duration = "6s"
bin = "200ms"
trace_sojourn = true
[bottleneck]
rate = "20Mbit"
qdisc = "dualpi2"
[[flows]]
cc = "prague"
rtt = "10ms"
[[flows]]
cc = "cubic"
rtt = "10ms"
[[flows]]
kind = "udp"
rate = "100kbit"
rtt = "10ms"
"""


def test_flent_icmp_ping_waits_in_dualpi2s_classic_queue(tmp_path):
    """A ping's echo is Not-ECT: DualPI2 queues it with the classic traffic. A Not-ECT UDP
    probe of 100 kbit/s through the same bottleneck measures that wait packet by packet (the
    sojourn trace); the exported ICMP ping is the base RTT plus the same wait (within 10 %),
    about twice the mean over both queues, which the L queue's short sojourns pull down."""
    pytest.importorskip("flent")
    from flent import resultset

    result = run(scenario_from_toml(PING_SCENARIO))
    result.write(tmp_path / "run")
    main(["export", "--flent", str(tmp_path / "run")])
    rs = resultset.load(str(tmp_path / "run" / "ping.flent.gz"))
    start = rs.t0 + 5 + 1.0  # flent's DELAY, then the first second of slow start left out
    ping = [r["val"] for r in rs.raw_values["Ping (ms) ICMP"] if r["t"] > start + 0.2]
    waited = sum(ping) / len(ping) - 10.0
    trace = result.sojourn[result.sojourn["time_s"] >= 1.0]
    probe = trace[trace["flow"] == 2]["sojourn_ms"].mean()
    mixed = trace["sojourn_ms"].mean()
    assert probe > 5.0
    assert waited == pytest.approx(probe, rel=0.10)
    assert waited > 1.5 * mixed


def test_flent_itself_plots_all_scaled(run_dir, tmp_path):
    pytest.importorskip("flent")
    out, _ = run_dir
    main(["export", "--flent", str(out), "--output", str(tmp_path / "run.flent.gz")])
    png = tmp_path / "out.png"
    proc = subprocess.run(
        [*_flent_cli(), "-i", str(tmp_path / "run.flent.gz"), "-p", "all_scaled", "-o", str(png)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_iperf3_json_per_tcp_flow(run_dir, tmp_path):
    out, result = run_dir
    assert main(["export", "--iperf3-json", str(out), "--output", str(tmp_path)]) == 0
    files = sorted(tmp_path.glob("iperf3-flow*.json"))
    assert [f.name for f in files] == ["iperf3-flow0.json", "iperf3-flow1.json"]
    for path, flow in zip(files, list(result.flows.itertuples())[:2], strict=True):
        doc = json.loads(path.read_text())
        end = doc["end"]
        assert end["sum_received"]["bits_per_second"] == pytest.approx(flow.goodput_mbps * 1e6)
        assert end["sum_received"]["bytes"] == flow.bytes_delivered
        assert end["streams"][0]["sender"]["mean_rtt"] == round(flow.mean_srtt_ms * 1000)
        assert end["streams"][0]["sender"]["min_rtt"] >= flow.base_rtt_ms * 1000
        assert doc["start"]["test_start"]["protocol"] == "TCP"
        assert len(doc["intervals"]) == 20  # 4 s of 200 ms bins
        assert all(i["sum"]["bits_per_second"] >= 0 for i in doc["intervals"])


def test_export_of_a_directory_that_is_not_a_run_is_one_line(tmp_path, capsys):
    assert main(["export", "--flent", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a finished run directory" in err[0]
    # An output under a file is a user mistake, found before anything is read or written.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["export", "--flent", str(tmp_path), "--output", str(blocker / "x.flent.gz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("l4slab: error: --output:"), err
    gz = tmp_path / "x.flent.gz"
    gz.write_bytes(gzip.compress(b"{}"))
    assert main(["export", "--iperf3-json", str(gz)]) == 2
