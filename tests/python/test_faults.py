"""Faults: byte flips in run files, SIGKILL of `study run` at random
moments, a full disk, a second concurrent `study run`, broken plans and catalogs.

The default suite runs small campaigns; ``L4SLAB_FAULTS=full`` runs the acceptance
campaigns (600 flips, 20 SIGKILLs) and prints their counts and times.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import cli, l4slab_command, one_line_error, requires_engine
from conftest import cli_in_process as main
from study_texts import small_study
from l4slab.errors import ScenarioError

pytestmark = [requires_engine, pytest.mark.engine]

FULL = os.environ.get("L4SLAB_FAULTS") == "full"



def write_study(tmp_path: Path, trials: int = 2, duration: str = "500ms") -> Path:
    path = tmp_path / "faults.toml"
    path.write_text(small_study("faults", trials, duration, ccs=("cubic", "prague")), encoding="utf-8")
    return path


def run_files(out: Path) -> list[Path]:
    return sorted((out / "runs").glob("*.parquet"))


def summaries(out: Path) -> pd.DataFrame:
    import l4slab.study as study

    frame = study.load(out).summaries
    return frame.sort_values(["point", "scope", "flow", "metric"], na_position="first", ignore_index=True)





@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished study (4 runs) and its summaries, copied by the tests that damage it."""
    import l4slab.study as study

    root = tmp_path_factory.mktemp("finished")
    path = write_study(root)
    out = root / "out"
    report = study.run(path, out, jobs=1)
    assert report.done == 4
    return path, out, summaries(out)


def copy_study(finished, tmp_path: Path) -> tuple[Path, Path]:
    path, out, _ = finished
    target = tmp_path / "out"
    shutil.copytree(out, target)
    return path, target


# --- 1. verifiable run files ------------------------------------------------------------------


def _flip(path: Path, rng: random.Random) -> int:
    data = bytearray(path.read_bytes())
    offset = rng.randrange(len(data))
    data[offset] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return offset


def test_run_files_carry_checksums(finished):
    import pyarrow.parquet as pq
    from l4slab.study import store

    _, out, _ = finished
    records = store.load_records(out)
    files = run_files(out)
    assert sorted(records) == sorted(f.stem for f in files)
    for file in files:
        assert records[file.stem] == hashlib.sha256(file.read_bytes()).hexdigest()
        metadata = pq.read_schema(file).metadata
        assert len(metadata[store.CHECKSUM_KEY]) == 64
        # Page checksums were written: verification on read passes, and is really on.
        pq.read_table(file, page_checksum_verification=True)
        meta, table = store.verify_run_file(file)
        assert meta["id"] == file.stem and table.num_rows > 0


def test_a_recorded_file_decodes_only_the_tables_asked_for(finished):
    """The catalog's reading of a recorded file (its bytes match records.jsonl) decodes the
    summary tables' columns only, with the values a full read gives; a file without a record
    is decoded whole, its content digest checked."""
    from l4slab.study import store

    _, out, _ = finished
    file = run_files(out)[0]
    records = store.load_records(out)
    meta, whole = store.verify_run_file(file, records)
    meta_part, part = store.verify_run_file(file, records, tables=store.SUMMARY_TABLES)
    assert meta_part == meta
    assert all(c == "table" or c.split(".", 1)[0] in store.SUMMARY_TABLES for c in part.column_names)
    assert any(c.startswith("flow_series.") for c in whole.column_names)
    for name in store.SUMMARY_TABLES:
        assert store.split_arrow(part, name).equals(store.split_arrow(whole, name)), name
    _, unrecorded = store.verify_run_file(file, {}, tables=store.SUMMARY_TABLES)
    assert unrecorded.column_names == whole.column_names


def test_byte_flips_are_all_detected(finished, tmp_path):
    """Random single-bit flips anywhere in a run file: every one is refused with the
    file's records (the bytes' sha256); without them (the in-file content digest and
    page CRCs only) a flip that is accepted decodes to exactly the original values."""
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    rng = random.Random(14)
    flips = 600 if FULL else 60
    files = run_files(out)
    pristine = {f: f.read_bytes() for f in files}
    originals = {f: store.verify_run_file(f)[1] for f in files}
    no_records: dict[str, str] = {}
    detected = detected_in_file = accepted_same = 0
    started = time.perf_counter()
    for i in range(flips):
        file = files[i % len(files)]
        file.write_bytes(pristine[file])
        _flip(file, rng)
        with pytest.raises(store.CorruptRunFile) as info:
            store.verify_run_file(file)
        assert str(file) in str(info.value) and "\n" not in str(info.value)
        detected += 1
        try:
            _, table = store.verify_run_file(file, no_records)
        except store.CorruptRunFile:
            detected_in_file += 1
        else:  # the flip changed nothing that decodes (statistics, padding): same values
            assert table.equals(originals[file])
            accepted_same += 1
    file.write_bytes(pristine[file])
    print(f"{flips} flips in {time.perf_counter() - started:.1f} s: {detected} refused with records.jsonl; "
          f"without it {detected_in_file} refused by page CRC / content digest, {accepted_same} unchanged")  # fmt: skip
    assert detected == flips


def test_corrupt_file_is_named_moved_aside_and_rerun(finished, tmp_path, capsys):
    import l4slab.study as study

    path, out = copy_study(finished, tmp_path)
    expected = finished[2]
    rng = random.Random(7)
    rounds = 150 if FULL else 2  # FULL: 150 rounds × 4 files = 600 flips, each repaired
    per_round = 4 if FULL else 1
    started = time.perf_counter()
    for i in range(rounds):
        files = run_files(out)
        flipped = [files[(i + k) % len(files)] for k in range(per_round)]
        for file in flipped:
            _flip(file, rng)
        capsys.readouterr()
        report = study.run(path, out, jobs=1)
        warning = [line for line in capsys.readouterr().err.splitlines() if "corrupt run file" in line]
        assert len(warning) == per_round and all("runs/corrupt" in line for line in warning), warning
        assert all(any(str(file) in line for line in warning) for file in flipped)
        assert (report.skipped, report.done, report.failed) == (4 - per_round, per_round, 0)
        assert len(run_files(out)) == 4
    assert len(list((out / "runs" / "corrupt").glob("*.parquet"))) == rounds * per_round
    pd.testing.assert_frame_equal(summaries(out), expected)
    print(f"{rounds * per_round} flips repaired in {rounds} `study run`s, {time.perf_counter() - started:.1f} s; "
          "summaries identical")  # fmt: skip


def test_readers_never_return_a_corrupt_file(finished, tmp_path, capsys):
    import l4slab.study as study
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    file = run_files(out)[0]
    data = bytearray(file.read_bytes())
    data[len(data) // 3] ^= 0x10
    file.write_bytes(bytes(data))
    with pytest.raises(store.CorruptRunFile, match="corrupt run file"):
        store.read_run_table(file, "flow_series")
    data_loaded = study.load(out)  # the catalog is rebuilt (the file is newer) without it
    assert "corrupt run file" in capsys.readouterr().err
    done = data_loaded.runs[data_loaded.runs["status"] == "done"]
    assert file.stem not in set(done["run_id"]) and len(done) == 3
    series = study.query(out, "SELECT DISTINCT run_id FROM flow_series")
    assert file.stem not in set(series["run_id"]) and len(series) == 3


# --- 2. the catalog ---------------------------------------------------------------------------


def test_catalog_leftovers_removed_and_bad_catalog_rebuilt(finished, tmp_path):
    import l4slab.study as study
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    dead = out / ".catalog.duckdb.999999999.abc.tmp"
    dead.write_bytes(b"x")
    Path(f"{dead}.wal").write_bytes(b"x")
    (out / "catalog.duckdb").write_bytes(b"not a database")
    assert len(study.load(out).runs) == 4  # garbage catalog: rebuilt, not a traceback
    assert not dead.exists() and not Path(f"{dead}.wal").exists()
    (out / "catalog.duckdb").unlink()
    assert len(study.query(out, "SELECT * FROM runs")) == 4  # missing: rebuilt
    store.rebuild_catalog(out)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".catalog")) == []


def test_a_catalog_that_fails_verification_is_not_renamed_into_place(finished, tmp_path, monkeypatch):
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    before = (out / "catalog.duckdb").read_bytes()
    real_verify = store._verify_catalog

    def build_lost_rows(path, tables):  # as if the build had written half the runs
        tables = dict(tables)
        tables["runs"] = pd.concat([tables["runs"], tables["runs"]], ignore_index=True)
        real_verify(path, tables)

    monkeypatch.setattr(store, "_verify_catalog", build_lost_rows)
    with pytest.raises(store.CatalogError) as info:
        store.rebuild_catalog(out)
    assert "\n" not in str(info.value) and "'runs' has 4 rows" in str(info.value)
    assert (out / "catalog.duckdb").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".catalog")]


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return proc.returncode == 0


def test_disk_full(finished, tmp_path, capsys):
    """A study on a 4 MB tmpfs filled up to the last ~200 kB: `study run` ends with one
    line (exit 1), leaves no catalog without its tables and no temp files; once space
    returns the next `study run` completes with the summaries of a normal disk."""
    path, _, expected = finished
    small = tmp_path / "small"
    if not _mount_tmpfs(small, "4m"):
        pytest.skip("needs root and `mount -t tmpfs` to make a small file system")
    try:
        out = small / "out"
        ballast = small / "ballast"
        free = shutil.disk_usage(small).free
        ballast.write_bytes(b"\0" * (free - 200_000))
        proc = main(capsys, "study", "run", str(path), "--out", str(out), "--jobs", "1", "--no-progress")
        line = one_line_error(proc, 1)
        assert "No space left on device" in line or "space" in line, line
        leftovers = [p.name for p in out.rglob("*") if ".tmp" in p.name]
        assert leftovers == []
        if (out / "catalog.duckdb").exists():  # an old catalog is only ever a complete one
            import duckdb

            with duckdb.connect(str(out / "catalog.duckdb"), read_only=True) as con:
                assert {"runs", "summaries"} <= {
                    r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
                }
        ballast.unlink()
        proc = main(capsys, "study", "run", str(path), "--out", str(out), "--jobs", "1", "--no-progress")
        assert proc.returncode == 0, proc.stderr
        assert len(run_files(out)) == 4
        pd.testing.assert_frame_equal(summaries(out), expected)
        assert not [p.name for p in out.rglob("*") if ".tmp" in p.name]
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


# --- 3. no orphans, one writer ----------------------------------------------------------------


def _session_members(sid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":  # session id; zombies are reaped by us
            members.append(int(entry.name))
    return members


def test_sigkill_at_random_moments(tmp_path):
    """SIGKILL the `study run` process (not its workers) at random moments after it has
    planned: its workers die with it (none left in its session), and the next run
    completes every run, each written once."""
    import l4slab.study as study
    from l4slab.study import store

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    kills = 20 if FULL else 2
    path = write_study(tmp_path, trials=15 if FULL else 3, duration="1s")
    out = tmp_path / "out"
    rng = random.Random(3)
    started = time.perf_counter()
    survivors_total = 0
    progress = []
    for _ in range(kills):
        launched = time.time_ns()
        proc = subprocess.Popen(
            l4slab_command("study", "run", str(path), "--out", str(out), "--jobs", "2", "--no-progress"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        plan = out / "plan.json"
        while proc.poll() is None and time.monotonic() < deadline:
            if plan.exists() and plan.stat().st_mtime_ns >= launched:
                break
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 2.0))
        os.kill(proc.pid, signal.SIGKILL)
        try:
            # The workers held the killed process's stdout/stderr: reading them ends
            # only when every holder is gone.
            proc.communicate(timeout=30)
            deadline = time.monotonic() + 10
            while _session_members(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        except subprocess.TimeoutExpired:
            pass
        finally:
            survivors = _session_members(proc.pid)
            for pid in survivors:  # started by this test: never left behind, even on failure
                os.kill(pid, signal.SIGKILL)
        survivors_total += len(survivors)
        assert survivors == []
        progress.append(len(run_files(out)))
    report = study.run(path, out, jobs=2)
    plan = json.loads((out / "plan.json").read_text())
    assert sorted(f.stem for f in run_files(out)) == sorted(r["id"] for r in plan["runs"])
    runs = study.load(out).runs
    assert runs["run_id"].is_unique and set(runs["status"]) == {"done"} and len(runs) == report.total
    lines = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    written = [line["id"] for line in lines]
    assert all(written.count(rid) <= 1 for rid in set(written)), "a finished run was run again"
    assert len(set(written)) >= report.total - kills  # a kill between rename and record may skip a record
    assert all(store.read_run_meta(f) is not None for f in run_files(out))
    print(f"{kills} SIGKILLs in {time.perf_counter() - started:.1f} s; run files after each kill: {progress}; "
          f"{survivors_total} processes left over; then {report.done} of {report.total} runs to finish")  # fmt: skip


def test_second_study_run_is_refused_naming_the_holder(tmp_path):
    """flock locks belong to an open file: a second open in this very process conflicts
    like another process would; the real second process is checked once."""
    from l4slab.study.lock import study_lock

    path = write_study(tmp_path)
    out = tmp_path / "out"
    with study_lock(out):
        line = one_line_error(cli("study", "run", str(path), "--out", str(out), "--no-progress"))
        with pytest.raises(ScenarioError, match=f"pid {os.getpid()}"):
            with study_lock(out):
                pass
        assert f"pid {os.getpid()}" in line
        assert not (out / "plan.json").exists()
    # Released with the holder: the same command now runs.
    with study_lock(out):
        pass


# --- 4. plans, ids, names, reports ------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: "[]",
        lambda text: json.dumps(
            {**json.loads(text), "runs": [{"id": "../../escaped_run", "point": 0, "trial": 0, "seed": 1}]}
        ),  # fmt: skip
        lambda text: json.dumps({**json.loads(text), "points": "x"}),
        lambda text: "[" * 100_000,
    ],
    ids=["truncated", "not-an-object", "escaping-id", "ill-typed", "deep"],
)
def test_broken_plan_is_one_line_in_every_command(finished, tmp_path, damage, capsys):
    _, out = copy_study(finished, tmp_path)
    plan = out / "plan.json"
    plan.write_text(damage(plan.read_text()))
    (out / "catalog.duckdb").unlink()
    rid = run_files(out)[0].stem
    for args in (("study", "status", str(out)), ("study", "report", str(out)), ("study", "run-one", str(out), rid),
                 ("query", str(out), "SELECT * FROM runs")):  # fmt: skip
        line = one_line_error(main(capsys, *args))
        assert "plan.json" in line, (args, line)
    assert not (tmp_path / "escaped_run.parquet").exists()


def test_ids_and_names_never_leave_the_study_directory(finished, tmp_path, capsys, monkeypatch):
    _, out = copy_study(finished, tmp_path)
    line = one_line_error(main(capsys, "study", "run-one", str(out), "../../escaped_run"))
    assert "is not a run id" in line
    study_file = tmp_path / "dots.toml"
    study_file.write_text(small_study("..", 1, "500ms", ccs=("cubic", "prague")))
    monkeypatch.chdir(tmp_path / "out")
    assert "study.name" in one_line_error(main(capsys, "study", "run", str(study_file), "--no-progress"))
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "out" / "results").exists()
    assert json.loads((out / "plan.json").read_text())["study"] == "faults"


def test_user_mistakes_exit_2_with_one_line(finished, tmp_path, capsys, monkeypatch):
    path, out = copy_study(finished, tmp_path)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    cases = [
        (("study", "run", str(path), "--out", ""), "--out"),
        (("study", "run", str(path), "--out", str(a_file)), "--out"),
        (("study", "run", str(path), "--out", "/proc/l4slab-nope/x"), "--out"),
        (("study", "run", str(path), "--emit-jobs", str(tmp_path)), "--emit-jobs"),
        (("study", "status", str(a_file)), str(a_file)),
        (("run", "examples/reference.toml", "--out", ""), "--out"),
        (("run", "examples/reference.toml", "--set", "bin=2min"), "bin"),
        (("run", "examples/reference.toml", "--set", "start_jitter=2min"), "start_jitter"),
        (("run", "examples/reference.toml", "--set", "flows[0].count=1000000000"), "count"),
        (("run", "examples/reference.toml", "--set", "bin=1ns"), "bin"),
        (("run", "examples/reference.toml", "--set", "flows[0].cc_params={beta=nan}"), "cc_params.beta"),
        (("run", "examples/reference.toml", "--set", f"seed={'9' * 5000}"), "seed"),
        (("run", "examples/reference.toml", "--set", f"name={'x' * 20000}"), "name"),
        (("study", "nope"), "invalid choice"),
    ]
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    for args, field in cases:
        line = one_line_error(main(capsys, *args))
        assert field in line, (args, line)
        assert len(line) < 400, (args, line)


def test_report_with_no_finished_run_is_one_line(tmp_path, capsys):
    path = write_study(tmp_path)
    out = tmp_path / "out"
    proc = main(capsys, "study", "run", str(path), "--out", str(out), "--emit-jobs", str(tmp_path / "jobs.txt"))
    assert proc.returncode == 0, proc.stderr
    line = one_line_error(main(capsys, "study", "report", str(out)))
    assert "no finished run" in line


def test_run_accepts_a_toml_string_of_any_length():
    import l4slab
    from l4slab.scenario import coerce_scenario, reference_scenario_path

    text = reference_scenario_path().read_text()
    one_line = "duration = '1s'\n" + text.replace("duration", "# duration")
    assert coerce_scenario(one_line).duration == 1_000_000_000
    padded = "# " + "x" * 10_000 + "\n" + one_line
    assert l4slab.run(padded, duration="200ms").summary["flows"]
    with pytest.raises(ScenarioError, match="cannot read the scenario file"):
        coerce_scenario("y" * 5000)
