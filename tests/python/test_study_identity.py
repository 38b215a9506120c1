"""A plan that cannot lie about its runs, and study directories that cannot mix.

* A run id is the hash of its resolved config, the engine's model (version and corpus
  digest) and the backend; ``study run-one``, the executors and the catalog recompute it.
* ``plan.json`` carries its own checksum: a swapped config, a changed backend or any
  single flipped byte is refused in one line or changes nothing (0 silent changes).
* A study directory belongs to one study: another study's ``study run --out`` exits 2 with
  one line (``--replace`` deletes the old results first); reports count only the runs of
  the current plan, so a new engine model re-runs a study instead of mixing two models.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import one_line_error, requires_engine
from conftest import cli_in_process as main
from study_texts import small_study
from l4slab.errors import ScenarioError

pytestmark = [requires_engine, pytest.mark.engine]



def write_study(tmp_path: Path, name: str = "ident", cc: str = "prague") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(small_study(name, ccs=("cubic", cc)), encoding="utf-8")
    return path




@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished two-run study, copied by the tests that change it."""
    import l4slab.study as study

    root = tmp_path_factory.mktemp("ident")
    path = write_study(root)
    out = root / "out"
    assert study.run(path, out, jobs=1).done == 2
    return path, out


def copy_study(finished, tmp_path: Path) -> tuple[Path, Path]:
    path, out = finished
    target = tmp_path / "out"
    shutil.copytree(out, target)
    return path, target


def rewrite_plan(out: Path, change, *, checksum: bool) -> None:
    """Apply ``change`` to the parsed plan; with ``checksum`` the plan's checksum is
    recomputed (a deliberate edit that keeps the file consistent with itself)."""
    from l4slab.study.store import plan_checksum

    plan = json.loads((out / "plan.json").read_text())
    change(plan)
    if checksum:
        plan["checksum"] = plan_checksum(plan)
    (out / "plan.json").write_text(json.dumps(plan, indent=1))


# --- run ids ---------------------------------------------------------------------------------------


def test_a_run_id_hashes_config_model_and_backend():
    from l4slab import schema
    from l4slab.study.spec import run_id

    config = {"seed": 1, "duration_ns": 1}
    ids = {
        run_id(config, schema.model_id()),
        run_id({**config, "seed": 2}, schema.model_id()),
        run_id(config, f"{schema.model_version() + 1}:x"),
        run_id(config, schema.model_id(), "emulate"),
        run_id(config, schema.model_id(), "kernel", "guest-a"),
        run_id(config, schema.model_id(), "kernel", "guest-b"),
    }
    assert len(ids) == 6
    assert schema.model_id().startswith(f"{schema.model_version()}:") and schema.model_version() >= 18


def test_every_result_names_its_model(finished):
    from l4slab import schema
    from l4slab.study import store

    _, out = finished
    plan = json.loads((out / "plan.json").read_text())
    assert plan["model"] == schema.model_id() and plan["model_version"] == schema.model_version()
    for path in sorted((out / "runs").glob("*.parquet")):
        meta = store.read_run_meta(path)
        assert meta["model"] == schema.model_id() and meta["model_version"] == schema.model_version()
        assert store.identity_mismatch(meta) is None


def test_a_single_run_summary_names_its_model():
    from l4slab import schema
    from l4slab.runner import run

    result = run({"duration": "100ms", "bottleneck": {"rate": "10Mbit"}, "flows": [{"cc": "cubic", "rtt": "10ms"}]})
    assert result.summary["model_version"] == schema.model_version()


# --- plan tampering --------------------------------------------------------------------------------


def _swap_configs(plan):
    first, second = plan["points"][0], plan["points"][1]
    first["config"], second["config"] = second["config"], first["config"]


def _to_emulate(plan):
    plan["backend"] = "emulate"


@pytest.mark.parametrize("checksum", [False, True], ids=["edited", "edited-and-rechecksummed"])
@pytest.mark.parametrize("change", [_swap_configs, _to_emulate], ids=["swap-configs", "backend-emulate"])
def test_a_tampered_plan_is_refused_by_run_one(finished, tmp_path, capsys, change, checksum):
    """Point 1's config swapped into point 0 (or the backend changed to the emulator):
    with the old checksum the plan is refused as changed; with a recomputed checksum
    the run ids no longer hash to the configs, and run-one refuses before running."""
    _, out = copy_study(finished, tmp_path)
    before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.parquet")}
    rewrite_plan(out, change, checksum=checksum)
    plan = json.loads((out / "plan.json").read_text())
    rid = plan["runs"][0]["id"]
    line = one_line_error(main(capsys, "study", "run-one", str(out), rid, "--force"))
    assert "plan.json" in line
    assert ("not the hash of its config" in line) if checksum else ("checksum" in line)
    assert {p.name: p.read_bytes() for p in (out / "runs").glob("*.parquet")} == before


def test_a_plan_of_another_model_is_refused_by_run_one(finished, tmp_path, capsys):
    from l4slab.study.spec import run_id

    _, out = copy_study(finished, tmp_path)

    def older_model(plan):
        plan["model"], plan["model_version"] = "17:" + "0" * 64, 17
        for run in plan["runs"]:
            config = {**plan["points"][run["point"]]["config"], "seed": run["seed"]}
            run["id"] = run_id(config, plan["model"], plan["backend"], plan["guest"])

    rewrite_plan(out, older_model, checksum=True)
    rid = json.loads((out / "plan.json").read_text())["runs"][0]["id"]
    line = one_line_error(main(capsys, "study", "run-one", str(out), rid))
    assert "planned with engine model 17" in line and "re-plan" in line


def test_every_flipped_byte_of_a_plan_is_refused_or_changes_nothing(finished, tmp_path):
    """Every byte of plan.json, each flipped two ways (its lowest bit, all its bits): a
    reader gets either one ScenarioError line naming plan.json or the very same plan."""
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    path = out / "plan.json"
    original = path.read_bytes()
    expected = store.load_plan(out)
    refused = same = 0
    silent = []
    for i in range(len(original)):
        for mask in (0x01, 0xFF):
            data = bytearray(original)
            data[i] ^= mask
            path.write_bytes(bytes(data))
            try:
                plan = store.load_plan(out)
            except ScenarioError as err:
                assert "\n" not in str(err) and "plan.json" in str(err), str(err)
                refused += 1
                continue
            if plan == expected:
                same += 1
            else:
                silent.append((i, mask))
    path.write_bytes(original)
    print(f"plan.json of {len(original)} bytes, {2 * len(original)} flips: {refused} refused, "
          f"{same} unchanged (whitespace), {len(silent)} silent")  # fmt: skip
    assert silent == [] and refused > 0.9 * 2 * len(original)


# --- one study per directory -----------------------------------------------------------------------


def test_another_study_into_the_same_out_is_refused_and_the_report_is_unchanged(finished, tmp_path, capsys):
    path, out = copy_study(finished, tmp_path)
    assert main(capsys, "study", "report", str(out)).returncode == 0
    report = (out / "report" / "report.md").read_bytes()
    other = write_study(tmp_path, name="other", cc="dctcp")
    line = one_line_error(main(capsys, "study", "run", str(other), "--out", str(out), "--no-progress"))
    assert "'ident'" in line and "'other'" in line and "--replace" in line
    assert json.loads((out / "plan.json").read_text())["study"] == "ident"
    assert main(capsys, "study", "report", str(out)).returncode == 0
    assert (out / "report" / "report.md").read_bytes() == report
    # --emit-jobs plans too: refused the same way.
    line = one_line_error(
        main(capsys, "study", "run", str(other), "--out", str(out), "--emit-jobs", str(tmp_path / "jobs.txt"))
    )
    assert "--replace" in line and not (tmp_path / "jobs.txt").exists()


def test_replace_deletes_the_other_study_first(finished, tmp_path, capsys):
    _, out = copy_study(finished, tmp_path)
    other = write_study(tmp_path, name="other", cc="dctcp")
    proc = main(capsys, "study", "run", str(other), "--out", str(out), "--no-progress", "--replace", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    assert "deleted the results of study 'ident'" in proc.stderr
    import l4slab.study as study

    runs = study.load(out).runs
    assert len(runs) == 2 and runs["in_plan"].all() and set(runs["status"]) == {"done"}
    assert json.loads((out / "plan.json").read_text())["study"] == "other"


def test_a_new_model_reruns_the_study_and_reports_count_only_its_runs(finished, tmp_path, capsys, monkeypatch):
    """Resuming after an engine change: the runs of the previous model are not the plan's
    runs (their ids hash the model), so every run is run again, and the report counts
    only the current plan's runs."""
    import l4slab.study as study
    from l4slab import schema

    path, out = copy_study(finished, tmp_path)
    real = schema.engine_schema()
    import dataclasses

    monkeypatch.setattr(
        schema, "engine_schema", lambda: dataclasses.replace(real, model_version=99, model_id="99:" + "f" * 64)
    )
    report = study.run(path, out, jobs=1)
    assert (report.total, report.skipped, report.done) == (2, 0, 2)
    runs = study.load(out).runs
    assert len(runs) == 4 and runs["in_plan"].sum() == 2
    assert len(study.load(out).current().runs) == 2
    assert main(capsys, "study", "report", str(out)).returncode == 0
    assert "2 of 2 runs done" in (out / "report" / "report.md").read_text()


def test_the_catalog_leaves_out_a_run_file_whose_identity_does_not_hash_to_its_id(finished, tmp_path, capsys):
    """A run file of point 1 placed under point 0's id (valid checksums, the defect a
    trusting run-one produced): the catalog recomputes the id and leaves it out."""
    from l4slab.study import store

    _, out = copy_study(finished, tmp_path)
    plan = store.load_plan(out)
    first, second = (r["id"] for r in plan["runs"])
    data = store.run_path(out, second).read_bytes()
    store.run_path(out, first).unlink()
    meta = store.read_run_meta(store.run_path(out, second))
    # Rewrite point 1's file under point 0's id: identity id changed, checksums recomputed.
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    identity = json.dumps({**meta, "id": first}).encode()
    table = table.replace_schema_metadata(None)
    table = table.replace_schema_metadata(
        {store.META_KEY: identity, store.CHECKSUM_KEY: store.content_digest(table, identity).encode()}
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer, write_page_checksum=True)
    store.write_run_file(out, first, buffer.getvalue())
    store.rebuild_catalog(out)
    err = capsys.readouterr().err
    assert "does not hash to its run id; left out" in err
    runs = store.collect(out)["runs"]
    assert runs.set_index("run_id").loc[first, "status"] == "pending"
