"""Emulated runs with the real kernel's TCP: they need root, /dev/net/tun, iperf3
and the l4slab-emu binary (``cargo build --release -p l4slab-emu``; ``make test`` builds it)
and skip with a one-line reason otherwise. About 30 s of wall time in all.

Everything runs under its own namespace prefix (``$L4SLAB_EMU_PREFIX``), and the module ends
by asserting that nothing with it is left: no namespace, no TUN device, no iperf3 or
emulator process (found by the prefix in their environment)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import emulation_skip_reason
from l4slab.cli import main

PREFIX = "l4stest"




# Real time: the emulator's forwarding loop keeps its schedule only on a machine not busy with
# other tests, so `make test` runs these after the parallel pass, alone.
_CANNOT_EMULATE = emulation_skip_reason()
pytestmark = [pytest.mark.serial, pytest.mark.skipif(_CANNOT_EMULATE is not None, reason=_CANNOT_EMULATE or "")]


@pytest.fixture(scope="module", autouse=True)
def own_prefix():
    """This module's namespace prefix; afterwards nothing of it may be left."""
    previous = os.environ.get("L4SLAB_EMU_PREFIX")
    os.environ["L4SLAB_EMU_PREFIX"] = PREFIX
    try:
        yield PREFIX
    finally:
        if previous is None:
            del os.environ["L4SLAB_EMU_PREFIX"]
        else:
            os.environ["L4SLAB_EMU_PREFIX"] = previous
    assert _leftovers() == [], "the emulated tests left namespaces or processes behind"


def _namespaces() -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith(f"{PREFIX}-")]


def _our_processes() -> list[str]:
    """iperf3 and l4slab-emu processes started under this module's prefix (their environment)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            if name not in ("iperf3", "l4slab-emu"):
                continue
            if f"L4SLAB_EMU_PREFIX={PREFIX}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(f"{name}[{pid}]")
        except OSError:
            continue
    return found


def _leftovers() -> list[str]:
    tuns = subprocess.run(["ip", "-o", "link", "show", "type", "tun"], capture_output=True, text=True, timeout=10)
    own_tuns = [line for line in tuns.stdout.splitlines() if PREFIX in line]
    return [*_namespaces(), *own_tuns, *_our_processes()]


def _scenario(tmp_path: Path, duration: str, name: str = "live") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nduration = "{duration}"\n'
        '[bottleneck]\nrate = "20Mbit"\nqdisc = "bfifo limit 2bdp"\n'
        '[[flows]]\ncc = "cubic"\nrtt = "20ms"\n'
    )
    return path


def _run_or_skip_if_slow(argv: list[str], capsys) -> tuple[int, str]:
    status = main(argv)
    captured = capsys.readouterr()
    if status == 1 and "did not keep up" in captured.err:
        pytest.skip(captured.err.strip())  # a loaded host: the emulator refused its own run
    assert status == 0, captured.err
    return status, captured.out


def test_single_cubic_flow_fills_a_20mbit_bfifo(tmp_path, capsys):
    """10 s of the kernel's CUBIC through 20 Mbit/s, 20 ms, bfifo of 2 BDP (100 kB).

    Expected from theory: a loss-based flow keeps a standing queue in a FIFO, so the link
    stays busy (utilisation >= 90 % including slow start and iperf3's handshake). CUBIC
    backs off to 0.7 W (tcp_cubic.c: beta 717/1024) from W = BDP + buffer = 3 BDP, so after
    its first loss the queue stays above 0.7 x 3 - 1 = 1.1 BDP: sRTT >= 20 ms x 2.1 = 42 ms
    on average, hence the bound of 40 ms."""
    out = tmp_path / "run"
    _, printed = _run_or_skip_if_slow(["emulate", str(_scenario(tmp_path, "10s")), "--out", str(out)], capsys)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "emulate"
    bottleneck, flow = summary["bottleneck"], summary["flows"][0]
    assert bottleneck["utilisation"] >= 0.90, bottleneck["utilisation"]
    assert flow["mean_srtt_ms"] >= 40.0, flow["mean_srtt_ms"]
    assert 17.0 <= flow["goodput_mbps"] <= 20.0, flow["goodput_mbps"]
    assert flow["cc"] == "cubic" and bottleneck["drops"] > 0  # a FIFO of 2 BDP overflows
    emulator = summary["emulator"]
    assert emulator["kept_up"] is True and emulator["departure_error_p99_us"] is not None
    assert "emulator: departure error P50/P99/max" in printed
    for name in ("emu_meta.json", "flows.parquet", "flow_series.parquet", "bottleneck_series.parquet"):
        assert (out / name).is_file(), name
    import pandas as pd

    series = pd.read_parquet(out / "flow_series.parquet")
    assert series["srtt_ms"].notna().mean() >= 0.8  # ss sampled (nearly) every bin


def test_compare_prints_a_table_and_writes_json(tmp_path, capsys):
    rows_file = tmp_path / "rows.json"
    out = tmp_path / "dirs"
    argv = ["compare", str(_scenario(tmp_path, "3s", "cmp")), "--trials", "1", "--json", str(rows_file)]
    _, printed = _run_or_skip_if_slow([*argv, "--out", str(out)], capsys)
    assert "emulated mean ± SD" in printed and "metrics within spread" in printed
    payload = json.loads(rows_file.read_text())
    rows = payload["rows"]
    # Start alignment: iperf3's first bulk data leaves 3-5 RTTs (here 20 ms) after the
    # client's launch; the simulated flow's SYN goes one RTT before it, with no jitter.
    assert payload["aligned"] is True
    emu = json.loads((out / "emulate" / "trial-0" / "summary.json").read_text())
    data_start_s = emu["emulator"]["flow_data_start_s"][0]
    launched_s = emu["flows"][0]["start_s"]
    assert launched_s + 2 * 0.020 <= data_start_s <= launched_s + 1.0, (launched_s, data_start_s)
    sim_config = json.loads((out / "sim" / "seed-1" / "scenario.json").read_text())
    assert sim_config["start_jitter_ns"] == 0
    assert sim_config["flows"][0]["start_ns"] == pytest.approx(data_start_s * 1e9 - 20e6, abs=1)
    assert {row["metric"] for row in rows} == {"throughput_mbps", "mean_srtt_ms", "mean_sojourn_ms", "drops", "marks"}
    assert all(row["verdict"] in ("within spread", "outside", "no data") for row in rows)


def test_study_backend_emulate_keeps_its_runs_apart(tmp_path, capsys):
    """One point, one trial, 2 s: the simulated run in DIR, the emulated one in DIR/emulate,
    each directory's catalog holding only its own backend's run."""
    study = tmp_path / "tiny.toml"
    study.write_text(
        '[study]\nname = "tiny"\nseed = 3\ntrials = 1\n[base]\nduration = "2s"\n'
        '[base.bottleneck]\nrate = "20Mbit"\n[[base.flows]]\ncc = "cubic"\nrtt = "20ms"\n'
        '[factors]\n"bottleneck.qdisc" = ["fq_codel"]\n'
    )
    out = tmp_path / "study"
    assert main(["study", "run", str(study), "--out", str(out), "--no-progress"]) == 0
    status = main(["study", "run", str(study), "--out", str(out), "--no-progress", "--backend", "emulate"])
    captured = capsys.readouterr()
    if status == 1 and "did not keep up" in captured.out + captured.err:
        pytest.skip("the host did not keep up")
    assert status == 0, captured.err
    from l4slab import study as study_api

    sim_runs = study_api.load(out).runs
    emu_runs = study_api.load(out / "emulate").runs
    assert list(sim_runs["status"]) == ["done"] and list(emu_runs["status"]) == ["done"]
    assert set(sim_runs["run_id"]).isdisjoint(emu_runs["run_id"])
    assert len(list((out / "runs").glob("*.parquet"))) == 1


def test_ctrl_c_removes_everything(tmp_path):
    """SIGINT in the middle of a run: exit 130, and no namespace or process is left. The child
    gets SIGINT's default disposition, as a command in a terminal has it: a shell starts a
    background job with SIGINT ignored, the ignore is inherited, and Python then installs no
    KeyboardInterrupt handler, so run under `make test &` the interrupt would be lost."""
    env = {**os.environ, "L4SLAB_EMU_PREFIX": PREFIX}
    proc = subprocess.Popen(
        [sys.executable, "-m", "l4slab", "emulate", str(_scenario(tmp_path, "10s", "intr"))],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (_namespaces() and any("iperf3" in p for p in _our_processes())):
            time.sleep(0.1)
        assert _namespaces(), "the emulator made no namespaces within 20 s"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == "l4slab: error: interrupted"
    assert _leftovers() == []
