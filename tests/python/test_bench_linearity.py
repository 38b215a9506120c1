"""``l4slab bench --linearity``: the engine's cost per packet must not grow with simulated time
(a regression guard: Prague over PIE with a huge limit went from 0.13 s for 1 s to over 120 s for 3 s
because every ACK scanned the SACK scoreboard from its head)."""

import json
import subprocess
from pathlib import Path

import pytest
from conftest import l4slab_command, requires_engine

REPO = Path(__file__).resolve().parents[2]

# examples/bench/prague-pie-783.toml made smaller: two Prague flows over PIE (limit 100 000 packets) at
# 783 Mbit/s, 2 ms. Its scoreboards grow to tens of thousands of segments after ~1.5 s; with
# the per-ACK scans the 3 s run took over 20 s (more than 10x a packet of the 0.3 s run).
SMALL_PIE_783 = """
name = "linearity-small"
duration = "1s"
seed = 1
[bottleneck]
rate = "783Mbit"
qdisc = "pie limit 100000"
[[flows]]
cc = "prague"
rtt = "2ms"
count = 2
"""


def l4slab(*args):
    return subprocess.run(l4slab_command(*args), capture_output=True, text=True, cwd=REPO, timeout=300)


@requires_engine
def test_cost_per_packet_stays_linear_on_a_small_prague_pie_scenario(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_PIE_783)
    completed = l4slab("bench", "--scenario", str(path), "--linearity", "300ms", "--repeat", "2", "--json")
    # The bench's own verdict (1.5x) is for a quiet machine; this scenario changes regime into a
    # retransmission storm after ~1.5 s. Timed by CPU time, best of interleaved rounds, it measured
    # 1.33-1.35x with the 2-core machine at load 8.6 (wall time had given 1.25-2.0x), so the test
    # asks for at most 2x (the old per-ACK scans gave > 10x), with the verdict consistent with the
    # report either way.
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    runs = report["runs"]
    assert [r["simulated_s"] for r in runs] == pytest.approx([0.3, 0.6, 1.2, 2.4, 3.0])
    assert all(a["packets"] < b["packets"] for a, b in zip(runs, runs[1:], strict=False))
    assert report["ratio"] == pytest.approx(runs[-1]["ns_per_packet"] / runs[0]["ns_per_packet"])
    assert report["max_ratio"] == 1.5 and report["ok"] == (report["ratio"] <= 1.5)
    assert (completed.returncode == 0) == report["ok"]
    assert report["ratio"] <= 2.0, report
    # Inside the storm regime (2.4 s and 3 s: 1.8 M and 2.8 M packets) a cost per packet growing
    # with the state (a scan per ACK: O(n^2) in all) would show as 2.8 / 1.8 = 1.58x between the two
    # runs; both are of one regime and size, so load moves them alike (measured 1.01-1.04x).
    storm = runs[-1]["ns_per_packet"] / runs[-2]["ns_per_packet"]
    assert storm <= 1.3, (storm, report)


def test_a_cost_growing_with_time_fails_the_check(monkeypatch, capsys):
    # The verdict itself: a packet of the longest run costing 2x one of the shortest exits 1
    # with one line naming the ratio (the engine replaced by fixed timings).
    from l4slab.cli import bench

    def fake_time(config):
        seconds = config["duration_ns"] / 1e9
        packets = int(100_000 * seconds)
        cost_ns = 1000 * (1 + seconds / 10)  # 1.1 us at 1 s, 2 us at 10 s
        cpu_s = packets * cost_ns / 1e9
        return {"packets": {"sent": packets}, "duration_s": seconds, "events": 2 * packets}, 3 * cpu_s, cpu_s

    monkeypatch.setattr(bench, "_cpu_time_config", fake_time)
    monkeypatch.setattr("l4slab.engine.version", lambda: "test")
    from l4slab.cli import main

    code = main(["bench", "--linearity", "--repeat", "1"])
    out = capsys.readouterr()
    assert code == 1
    assert "linearity: FAILED" in out.out and "1.82x" in out.out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("l4slab: error: linearity check failed")


@requires_engine
def test_bad_linearity_arguments_are_one_line():
    for args, fragment in [
        (("--linearity", "0s"), "--linearity: '0s' is not a positive time"),
        (("--linearity", "fast"), "--linearity"),
        (("--linearity", "1s", "--duration", "2s"), "leave out --qdisc and --duration"),
    ]:
        completed = l4slab("bench", *args)
        assert completed.returncode == 2, completed
        assert "Traceback" not in completed.stderr
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("l4slab: error: ") and fragment in lines[0], lines


def test_rounds_are_interleaved_and_the_best_cpu_time_counts(monkeypatch):
    # A load burst during one round must not fall on one run length only: every length runs once
    # per round, and each length reports its best (least disturbed) CPU time.
    from l4slab.cli import bench

    calls: list[int] = []
    # (round, length) -> CPU seconds: round 0 is disturbed for the longest run, round 1 for the shortest.
    cpu = {(0, 0): 1.0, (0, 1): 5.0, (1, 0): 3.0, (1, 1): 2.0}

    def fake_time(config):
        length = config["i"]
        round_ = sum(1 for c in calls if c == length)
        calls.append(length)
        return {"packets": {"sent": 10}}, 10.0 + round_, cpu[(round_, length)]

    monkeypatch.setattr(bench, "_cpu_time_config", fake_time)
    best = bench._linearity_runs([{"i": 0}, {"i": 1}], repeat=2)
    assert calls == [0, 1, 0, 1]
    assert [(wall, cpu_s) for _, wall, cpu_s in best] == [(10.0, 1.0), (10.0, 2.0)]
