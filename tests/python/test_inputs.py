"""Input files and study directories that cannot hang, swallow memory or lie.

Every reproducer gets its one-line refusal or is repaired: a FIFO or a device as a
scenario, study or ``base`` file; a FIFO (or an oversized file) in a study directory; a
catalog with a damaged block; SQL that would read or write other files; empty SQL; a
damaged failure record; temp files of a report and record spills of a killed process.
Each command runs under a timeout, so a hang fails the test instead of the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli, cli_here, l4slab_command, requires_engine
from conftest import one_line_error as one_line
from study_texts import small_study

pytestmark = [requires_engine, pytest.mark.engine]

STUDY = small_study("inputs")

SCENARIO = """
duration = "200ms"
[bottleneck]
rate = "10Mbit"
qdisc = "bfifo"
buffer = "1bdp"
[[flows]]
cc = "cubic"
rtt = "10ms"
"""




@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished two-run study, copied by the tests that damage it."""
    import l4slab.study as study

    root = tmp_path_factory.mktemp("inputs")
    path = root / "inputs.toml"
    path.write_text(STUDY, encoding="utf-8")
    out = root / "out"
    assert study.run(path, out, jobs=1).done == 2
    return path, out


def copy_study(finished, tmp_path: Path) -> tuple[Path, Path]:
    path, out = finished
    shutil.copytree(out, tmp_path / "out")
    return path, tmp_path / "out"


# --- input files: regular files only, bounded, read in time ----------------------------------


def test_fifo_scenario_file_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "scenario.toml"
    os.mkfifo(fifo)
    line = one_line(cli("run", str(fifo), timeout=30))
    assert f"{fifo}: a FIFO, not a regular file" in line
    line = one_line(cli("study", "run", str(fifo), "--out", str(tmp_path / "o"), timeout=30))
    assert "a FIFO, not a regular file; a study file must be a regular file" in line


def test_device_as_scenario_or_base_is_refused(tmp_path):
    line = one_line(cli("run", "/dev/zero", timeout=30))
    assert "/dev/zero: a character device, not a regular file" in line
    study = tmp_path / "zero.toml"
    study.write_text('base = "/dev/zero"\n[study]\nname = "zero"\n[factors]\n"seed" = [1, 2]\n', encoding="utf-8")
    line = one_line(cli("study", "run", str(study), "--out", str(tmp_path / "o"), timeout=30))
    assert "base: /dev/zero: a character device, not a regular file" in line


def test_oversized_scenario_file_is_refused_before_parsing(tmp_path):
    from l4slab.errors import ScenarioError
    from l4slab.io import MAX_TEXT_FILE_BYTES
    from l4slab.scenario import load_scenario

    big = tmp_path / "big.toml"
    with open(big, "wb") as handle:
        handle.write(SCENARIO.encode())
        handle.truncate(MAX_TEXT_FILE_BYTES + 1)  # sparse: no disk, no memory
    with pytest.raises(ScenarioError, match=rf"{MAX_TEXT_FILE_BYTES + 1} bytes; a scenario file may hold at most"):
        load_scenario(big)


def test_a_read_that_hangs_is_bounded_in_time(tmp_path, monkeypatch):
    """A regular file whose read never returns (a hung network file system, simulated by a
    read that blocks) is one line after the time bound."""
    import threading

    from l4slab import io
    from l4slab.errors import ScenarioError

    path = tmp_path / "slow.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    release = threading.Event()
    real_read = os.read

    def stuck(fd, n):
        release.wait(30)
        return real_read(fd, n)

    monkeypatch.setattr(io.os, "read", stuck)
    try:
        with pytest.raises(ScenarioError, match=r"not read within 0.5 s"):
            io.read_input(path, "scenario file", timeout_s=0.5)
    finally:
        release.set()


def test_fifo_in_runs_does_not_hang_any_command(finished, tmp_path):
    """A FIFO named like a run file: status and query leave it out, report says so, and
    `study run` moves it aside and runs it again; none waits for a writer."""
    path, out = copy_study(finished, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[0]
    victim.unlink()
    os.mkfifo(victim)
    for args in (("study", "status", str(out)), ("query", str(out), "SELECT count(*) AS n FROM flows")):
        proc = cli(*args, timeout=60)
        assert proc.returncode == 0, (args, proc.stderr)
        assert f"{victim}: a FIFO, not a regular file" in proc.stderr, (args, proc.stderr)
    proc = cli("study", "report", str(out), timeout=120)  # the catalog built above leaves it out
    assert proc.returncode == 0, proc.stderr
    proc = cli("study", "run", str(path), "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "moved to" in proc.stderr and "1 run now" in proc.stdout, (proc.stdout, proc.stderr)
    assert victim.is_file()


def test_fifo_plan_and_records_are_one_line(finished, tmp_path):
    path, out = copy_study(finished, tmp_path)
    (out / "plan.json").unlink()
    os.mkfifo(out / "plan.json")
    line = one_line(cli("study", "status", str(out), timeout=30))
    assert f"{out / 'plan.json'}: a FIFO, not a regular file" in line

    path, out = copy_study(finished, tmp_path / "second")
    (out / "records.jsonl").unlink()
    os.mkfifo(out / "records.jsonl")
    for run in (out / "runs").glob("*.parquet"):
        run.unlink()
    line = one_line(cli("study", "run", str(path), "--out", str(out), timeout=120))
    assert f"{out / 'records.jsonl'}: not a regular file; remove it" in line


def test_damaged_failure_record_is_named(finished, tmp_path):
    import l4slab.study as study

    _, out = copy_study(finished, tmp_path)
    victim = sorted((out / "runs").glob("*.parquet"))[0]
    victim.unlink()
    (out / "failed").mkdir(exist_ok=True)
    (out / "failed" / f"{victim.stem}.json").write_text('{"error": "engine: x', encoding="utf-8")
    runs = study.load(out).runs
    error = runs.loc[runs["run_id"] == victim.stem, "error"].item()
    assert "the failure record" in error and f"{victim.stem}.json is unreadable" in error


# --- the catalog: rebuilt when damaged; SQL over a read-only view ----------------------------


def _damage_catalog(out: Path) -> None:
    """Flip bytes across every data block of the catalog (the header stays valid), and date
    it after the run files so it is not rebuilt for being stale."""
    catalog = out / "catalog.duckdb"
    data = bytearray(catalog.read_bytes())
    for block in range(0x48000, len(data), 256 * 1024):  # past the header and metadata blocks
        for offset in range(block + 8, min(block + 4096, len(data)), 37):
            data[offset] ^= 0x55
    catalog.write_bytes(bytes(data))
    later = os.stat(out / "plan.json").st_mtime + 3600
    os.utime(catalog, (later, later))


def test_damaged_catalog_is_rebuilt_on_read(finished, tmp_path):
    _, out = copy_study(finished, tmp_path)
    _damage_catalog(out)
    proc = cli("study", "report", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "catalog.duckdb: damaged (" in proc.stderr and "rebuilt from the run files" in proc.stderr
    assert "internal error" not in proc.stderr
    assert "Corrupt database file" in proc.stderr  # a data block's checksum, not the header

    # Every table read whole, so the damaged block is among those read.
    sql = " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM (SELECT DISTINCT * FROM {t})"
                             for t in ("runs", "flows", "bottleneck", "classes", "summaries"))  # fmt: skip
    _, fresh = copy_study(finished, tmp_path / "fresh")
    intact = cli("query", str(fresh), sql, "--csv")
    assert intact.returncode == 0 and not intact.stderr, intact.stderr
    _damage_catalog(fresh)
    proc = cli("query", str(fresh), sql, "--csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == intact.stdout and "rebuilt from the run files" in proc.stderr


def test_query_reads_the_study_only(finished, tmp_path):
    _, out = copy_study(finished, tmp_path)
    target = tmp_path / "written.csv"
    line = one_line(cli_here("query", str(out), f"COPY (SELECT 1) TO '{target}'"))
    assert "COPY statements are refused" in line and "--allow-files" in line
    assert not target.exists()
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", f"SELECT * FROM read_parquet('{out}/runs/*.parquet')",
                f"SELECT 1; ATTACH '{tmp_path / 'x.duckdb'}'", "SET enable_external_access = true"):  # fmt: skip
        one_line(cli_here("query", str(out), sql))
    # The study's own series views stay readable.
    proc = cli_here("query", str(out), "SELECT count(DISTINCT run_id) AS n FROM flow_series", "--csv")
    assert proc.returncode == 0 and proc.stdout.split() == ["n", "2"], proc.stderr
    # Asked for, file access is DuckDB's default.
    proc = cli_here("query", str(out), f"COPY (SELECT 1 AS x) TO '{target}'", "--allow-files")
    assert proc.returncode == 0, proc.stderr
    assert target.read_text().split() == ["x", "1"]


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment"])
def test_empty_query_is_one_line(finished, sql):
    _, out = finished
    line = one_line(cli_here("query", str(out), sql))
    assert "query: the SQL" in line


# --- temporary files of a killed process ----------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_report_removes_temp_figures_of_a_killed_report(finished, tmp_path):
    from l4slab.study.report import report

    _, out = copy_study(finished, tmp_path)
    (out / "report").mkdir(exist_ok=True)
    dead = out / "report" / f".fig.png.{_dead_pid()}.abcd1234.tmp"
    dead.write_bytes(b"half a figure")
    live = out / "report" / f".fig.png.{os.getppid()}.abcd1234.tmp"
    live.write_bytes(b"a live writer's")
    report(out)
    assert not dead.exists() and live.exists()


def test_record_spills_of_a_killed_process_are_removed(tmp_path, monkeypatch):
    import tempfile

    from l4slab.records import RecordSpill

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"l4slab-records-{_dead_pid()}-abcd1234"
    dead.mkdir()
    (dead / "requests-0.jsonl").write_text("[]\n")
    live = tmp_path / f"l4slab-records-{os.getppid()}-abcd1234"
    live.mkdir()
    spill = RecordSpill()
    assert spill.path.parent == tmp_path and spill.path.name.startswith(f"l4slab-records-{os.getpid()}-")
    assert not dead.exists() and live.exists()
    spill.cleanup()


def test_sigkilled_web_run_leaves_no_spill_after_the_next(tmp_path):
    """SIGKILL a web run mid-run (its spill directory exists), then run another: the dead
    run's spill is gone."""
    import signal
    import time

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    scenario = tmp_path / "web.toml"
    scenario.write_text(
        SCENARIO.replace('duration = "200ms"', 'duration = "600s"')
        + '[[sources]]\nkind = "web"\nrate = "20/s"\ncc = "cubic"\nrtt = "10ms"\n',
        encoding="utf-8",
    )
    proc = subprocess.Popen(l4slab_command("run", str(scenario)), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("l4slab-records-*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(tmp_path.glob("l4slab-records-*")), "the web run made no spill directory"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert list(tmp_path.glob("l4slab-records-*"))  # SIGKILL skips every finalizer
    short = tmp_path / "short.toml"
    short.write_text(SCENARIO + '[[sources]]\nkind = "web"\nrate = "20/s"\ncc = "cubic"\nrtt = "10ms"\n')
    done = subprocess.run(l4slab_command("run", str(short)), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("l4slab-records-*"))


def test_read_input_returns_the_bytes(tmp_path):
    from l4slab.io import read_input

    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"a": 1}))
    assert json.loads(read_input(path, "file")) == {"a": 1}
    with pytest.raises(FileNotFoundError):
        read_input(tmp_path / "missing", "file")
