"""Running a study: plan it into its directory, run what has no result yet, report progress.

:func:`plan` validates and expands the study file and writes ``study.toml`` and
``plan.json``; :func:`run` executes every pending run (process pool or Dask) and
rebuilds the catalog; :func:`run_one` and :func:`emit_jobs` serve job arrays;
:func:`status` counts done / pending / failed runs per factor value.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from .. import memory
from ..errors import ScenarioError
from ..io import check_out_file, write_json, write_text
from . import lock, store
from .spec import StudySpec, load_study, run_id

__all__ = ["plan", "run", "run_one", "emit_jobs", "status", "pending_runs", "RunReport", "PLAN_SCHEMA"]

PLAN_SCHEMA = "l4slab.study.plan/2"


#: Backends a study runs on: the engine, real kernel TCP through the emulator, or
#: the whole scenario on a real kernel in a virtual-time guest (:mod:`l4slab.kernel`).
BACKENDS = ("sim", "emulate", "kernel")


def guest_digest() -> str:
    """For ``kernel`` run ids: the digest of the guest's own files
    (:func:`l4slab.kernel.build.project_inputs`: config, patches, the project's modules,
    the guest programs) and the build recipe, so a resumed study never takes a result of
    another guest's kernel or Prague for this one's."""
    from ..kernel.build import RECIPE_VERSION, project_inputs

    return f"{project_inputs()[1]}:{RECIPE_VERSION}"


def _for_backend(spec: StudySpec, backend: str) -> StudySpec:
    """The spec with run ids for ``backend`` (each id hashes the backend)."""
    if backend not in BACKENDS:
        raise ScenarioError(f"--backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend == spec.backend:
        return spec
    import dataclasses

    guest = guest_digest() if backend == "kernel" else ""
    runs = [dataclasses.replace(r, id=run_id(spec.config(r), spec.model, backend, guest)) for r in spec.runs]
    return dataclasses.replace(spec, runs=runs, backend=backend, guest=guest)


def default_backend_out(spec: StudySpec, out: str | os.PathLike[str] | None, backend: str) -> Path:
    """Emulated runs live in their own study directory ``DIR/emulate`` (plan, runs,
    catalog), beside the simulated ones in ``DIR``: the two never mix in one catalog."""
    base = Path(out) if out is not None else default_out(spec)
    return base if backend == "sim" else base / backend


def _plan_dict(spec: StudySpec) -> dict[str, Any]:
    from .. import schema

    plan_data = {
        "schema": PLAN_SCHEMA,
        "backend": spec.backend,
        "guest": spec.guest,
        "study": spec.name,
        "seed": spec.seed,
        "trials": spec.trials,
        "metrics": spec.metrics,
        "report": spec.report,
        "model": spec.model,
        "model_version": schema.model_version(),
        "factors": [
            {"path": f.path, "column": f.column, "values": list(f.values), "preset": f.preset and f.preset.name}
            for f in spec.factors
        ],
        "points": [
            {
                "index": p.index,
                "key": p.key,
                "factors": {f.column: p.values[f.path] for f in spec.factors},
                "scenario": p.scenario,
                "config": p.config,
            }
            for p in spec.points
        ],
        "runs": [{"id": r.id, "point": r.point, "trial": r.trial, "seed": r.seed} for r in spec.runs],
    }
    plan_data["checksum"] = store.plan_checksum(plan_data)
    return plan_data


def _task(plan: dict[str, Any], run: dict[str, Any], max_memory: int | None = None) -> dict[str, Any]:
    point = plan["points"][run["point"]]
    return {
        "id": run["id"],
        # Not part of the run: the bound its worker checks it against (memory.check).
        "max_memory": max_memory,
        "backend": plan["backend"],
        "guest": plan["guest"],
        "model": plan["model"],
        "config": {**point["config"], "seed": run["seed"]},
        "scenario": point["scenario"],
        "meta": {
            "id": run["id"],
            "study": plan["study"],
            "point": run["point"],
            "point_key": point["key"],
            "factors": point["factors"],
            "trial": run["trial"],
            "seed": run["seed"],
            "backend": plan["backend"],
            "guest": plan["guest"],
            "model": plan["model"],
            "model_version": plan.get("model_version"),
        },
    }


def check_run(directory: Path, plan_data: Mapping[str, Any], run: Mapping[str, Any], where: str) -> None:
    """Refuse (one line) a planned run whose id is not the hash of its config, this
    engine's model and the plan's backend: a plan made by another model, or whose
    configs, seeds, ids or backend were changed after planning."""
    from .. import schema

    plan_path = Path(directory) / "plan.json"
    redo = f"re-plan it with `l4slab study run FILE --out {directory}`"
    if plan_data["model"] != schema.model_id():
        raise ScenarioError(
            f"{where}: {plan_path} was planned with engine model {plan_data.get('model_version')}, this engine is "
            f"model {schema.model_version()}; {redo} (its runs are run again)"
        )
    backend, guest = plan_data["backend"], plan_data["guest"]
    if backend == "kernel" and guest != guest_digest():
        raise ScenarioError(f"{where}: {plan_path} was planned for another kernel guest; {redo}")
    point = plan_data["points"][run["point"]]
    if run_id({**point["config"], "seed": run["seed"]}, plan_data["model"], backend, guest) != run["id"]:
        raise ScenarioError(
            f"{where}: {plan_path}: run {run['id'][:12]} is not the hash of its config, seed, model and backend "
            f"{backend!r} (the plan was changed after planning); {redo}"
        )


def default_out(spec: StudySpec) -> Path:
    return Path("results") / spec.name


def plan(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    panels: Sequence[str] | None = None,
    replace: bool = False,
) -> tuple[Path, dict[str, Any]]:
    """Validate and expand the study file (``overrides``: base scenario fields by path;
    ``panels``: only these of its ``[panels.NAME]``), write ``study.toml`` and
    ``plan.json`` into the study directory (default ``results/<name>``); return
    (directory, plan). A directory of another study is refused unless ``replace``."""
    spec = load_study(path, overrides=overrides, panels=panels)
    with lock.study_lock(Path(out) if out is not None else default_out(spec)):
        return _write_plan(spec, out, replace)


#: What a study directory holds of its study (removed by ``--replace``); the backends'
#: own study directories (``DIR/emulate``, ``DIR/kernel``) are checked on their own.
STUDY_FILES = ("plan.json", "study.toml", store.RECORDS, store.CATALOG)
STUDY_DIRS = ("runs", "failed", "report")


def _owner(directory: Path) -> str | None:
    """The study name a directory's ``plan.json`` names (None: no plan). A damaged plan
    still names its study when its JSON reads; else the directory's run files do."""
    import json

    try:
        text = (directory / "plan.json").read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    try:
        name = json.loads(text).get("study")
    except (ValueError, AttributeError, RecursionError):
        name = None
    return name if isinstance(name, str) else ""


def _claim(directory: Path, spec: StudySpec, replace: bool) -> None:
    """A study directory belongs to one study (its name; the content hash of its plan is
    plan.json's checksum): another study's directory is refused in one line, or with
    ``replace`` emptied of that study first. Re-planning the same study (another panel,
    ``--set``, a new engine model) keeps its runs: run ids are content hashes, and the
    catalog and reports count only the runs of the current plan."""
    owner = _owner(directory)
    if owner is None or owner == spec.name:
        return
    if not replace:
        held = f"study {owner!r}" if owner else "a study whose plan.json is unreadable"
        raise ScenarioError(
            f"--out {directory}: holds {held}, not {spec.name!r}; choose another --out, or pass --replace "
            f"to delete its results and run {spec.name!r} there"
        )
    import shutil

    for name in STUDY_FILES:
        (directory / name).unlink(missing_ok=True)
    for name in STUDY_DIRS:
        shutil.rmtree(directory / name, ignore_errors=True)
    store.warn(f"--replace: {directory}: deleted the results of study {owner!r}")


def _write_plan(spec: StudySpec, out: str | os.PathLike[str] | None, replace: bool = False) -> tuple[Path, dict[str, Any]]:
    directory = Path(out) if out is not None else default_out(spec)
    _claim(directory, spec, replace)
    plan_data = _plan_dict(spec)
    directory.mkdir(parents=True, exist_ok=True)
    write_text(directory / "study.toml", spec.source_text)
    write_json(directory / "plan.json", plan_data)
    return directory, plan_data


def _require_plan(directory: Path) -> dict[str, Any]:
    plan_data = store.load_plan(directory)
    if plan_data is None:
        raise ScenarioError(f"{directory}: not a study directory (no plan.json); run `l4slab study run FILE --out DIR`")
    return plan_data


def pending_runs(directory: Path, plan_data: dict[str, Any], *, repair: bool = False) -> list[dict[str, Any]]:
    """Planned runs without a valid run file (failed runs are retried). With ``repair``
    (``study run``, holding the directory's lock) a run file that fails verification is
    moved to ``runs/corrupt/`` with a one-line warning; else it is only named."""
    on_corrupt = (lambda path, why: store.quarantine(directory, path, why)) if repair else None
    status = store.run_status(directory, [r["id"] for r in plan_data["runs"]], on_corrupt)
    return [r for r in plan_data["runs"] if status[r["id"]] != "done"]


@dataclass
class RunReport:
    """What :func:`run` did."""

    directory: Path
    total: int
    skipped: int
    done: int
    failed: int
    errors: dict[str, str]


def run(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    executor: str | None = "local",
    jobs: int | None = None,
    progress: bool = False,
    on_run: Callable[[str, str | None], None] | None = None,
    overrides: Mapping[str, Any] | None = None,
    panels: Sequence[str] | None = None,
    backend: str = "sim",
    replace: bool = False,
    max_memory: int | None = None,
) -> RunReport:
    """Run a study: validate and expand it, run every run without a valid result file
    (``executor``: ``local``, ``dask-local`` or ``dask://HOST:PORT``), then rebuild the
    catalog. Re-running continues where an interrupted run stopped. ``overrides`` set
    base scenario fields by path (``{"duration": "5s"}``); ``panels`` runs only those
    panels of a study with ``[panels.NAME]`` tables. ``backend = "emulate"`` runs every
    run with real kernel TCP through the emulator (:mod:`l4slab.emulate`), one at a time
    in this process (they use real time), into the study directory ``DIR/emulate``;
    ``backend = "kernel"`` runs each run in its own guest (:mod:`l4slab.kernel`), ``jobs``
    guests at a time, into ``DIR/kernel``. A directory holding another study is refused
    (one line) unless ``replace`` (its results are deleted first). Before a simulated
    run starts, the pending runs that would run at once must fit in ``max_memory`` bytes
    (default: ``L4SLAB_MAX_MEMORY``, else the memory available now;
    :func:`l4slab.memory.check_concurrent`), and each worker checks its run again when it
    starts (:func:`l4slab.memory.check`): a refusal is one line, before anything runs."""
    from .executors import parse_executor

    kind, address = parse_executor(executor)
    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs: {jobs} is not a positive number of processes; expected e.g. 4")
    from ..scenario.resolve import resolving_for

    with resolving_for(backend):  # the kernel backend also resolves the scenario's own [kernel] files
        spec = _for_backend(load_study(path, overrides=overrides, panels=panels), backend)
    if backend == "emulate":
        if kind != "local":
            raise ScenarioError(f"--executor: {executor} cannot run emulated runs; they run one at a time locally")
        kind = "sequential"
        out = default_backend_out(spec, out, backend)
    elif backend == "kernel":
        if kind != "local":
            raise ScenarioError(f"--executor: {executor} cannot run kernel runs; they run locally, one guest per job")
        out = default_backend_out(spec, out, backend)
        _prepare_kernel(spec, progress)
    with lock.study_lock(Path(out) if out is not None else default_out(spec)):
        return _run_locked(spec, out, kind, address, jobs, progress, on_run, replace, max_memory)


def _prepare_kernel(spec: StudySpec, progress: bool) -> None:
    """Before any worker starts: refuse what the kernel cannot honour (every point, one
    line) and build or find every guest the points need once, so workers only boot them."""
    from ..kernel.run import prepare_study

    prepare_study(spec.points, progress)


def _run_locked(spec, out, kind, address, jobs, progress, on_run, replace=False, max_memory=None) -> RunReport:
    from .executors import run_dask, run_local, run_sequential, worker_count

    directory, plan_data = _write_plan(spec, out, replace)
    todo = pending_runs(directory, plan_data, repair=True)
    tasks = [_task(plan_data, r, max_memory) for r in todo]
    if plan_data["backend"] == "sim":
        workers = 1 if kind == "sequential" else worker_count(jobs, len(tasks))
        memory.check_concurrent({t["id"]: t["config"] for t in tasks}, workers, max_memory)
    errors: dict[str, str] = {}
    counts = {"done": 0}

    bar = _progress(progress, len(plan_data["runs"]), len(plan_data["runs"]) - len(todo))
    # The catalog is built as runs finish: each new file's part is decoded here, while the
    # workers run, and the catalog at the end only assembles the parts.
    prepared = store.Prepared(plan_data)

    def on_done(outcome) -> None:
        rid, data, _wall, error, part = outcome
        if data is not None:
            store.write_run_file(directory, rid, data)
            prepared.add(rid, data, part)
            counts["done"] += 1
        else:
            store.write_failure(directory, rid, error or "unknown error")
            errors[rid] = error or "unknown error"
        if bar is not None:
            bar[0].advance(bar[1])
        if on_run is not None:
            on_run(rid, error)

    try:
        if bar is not None:
            bar[0].start()
        if kind == "sequential":
            run_sequential(tasks, on_done)
        elif kind == "local":
            run_local(tasks, jobs, on_done)
        else:
            run_dask(tasks, address, jobs, on_done)
    finally:
        if bar is not None:
            bar[0].stop()
        store.rebuild_catalog(directory, prepared)
    return RunReport(directory, len(plan_data["runs"]), len(plan_data["runs"]) - len(todo), counts["done"],
                     len(errors), errors)  # fmt: skip


def _progress(enabled: bool, total: int, completed: int):
    if not enabled:
        return None
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("runs"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = progress.add_task("runs", total=total, completed=completed)
    return progress, task


def run_one(
    directory: str | os.PathLike[str], rid: str, *, force: bool = False, max_memory: int | None = None
) -> str | None:
    """Run one planned run in this process and write its file; None on success, else the
    error. A run that is already done is skipped (unless ``force``); a simulated run whose
    memory estimate exceeds ``max_memory`` (else what is available) is refused in one line
    before it runs (:func:`l4slab.memory.check`)."""
    from .executors import execute

    directory = Path(directory)
    plan_data = _require_plan(directory)
    runs = {r["id"]: r for r in plan_data["runs"]}
    store.check_run_id(rid, "run-one")
    if rid not in runs:
        raise ScenarioError(f"run-one: {rid!r} is not a run of {directory}/plan.json")
    check_run(directory, plan_data, runs[rid], "run-one")
    if not force and store.read_run_meta(store.run_path(directory, rid)) is not None:
        return None
    task = _task(plan_data, runs[rid], max_memory)
    if task["backend"] == "sim":
        memory.check(task["config"], max_memory)
    _, data, _, error = execute(task)
    if data is None:
        store.write_failure(directory, rid, error or "unknown error")
        return error or "unknown error"
    store.write_run_file(directory, rid, data)
    return None


def emit_jobs(
    path: str | os.PathLike[str],
    jobs_file: str | os.PathLike[str],
    out=None,
    panels: Sequence[str] | None = None,
    replace: bool = False,
) -> tuple[Path, int]:
    """Plan the study and write one ``l4slab study run-one DIR ID`` line per pending run."""
    check_out_file(jobs_file, "--emit-jobs")
    directory, plan_data = plan(path, out, panels=panels, replace=replace)
    todo = pending_runs(directory, plan_data)
    absolute = shlex.quote(str(directory.resolve()))
    lines = [f"l4slab study run-one {absolute} {r['id']}\n" for r in todo]
    write_text(jobs_file, "".join(lines))
    return directory, len(lines)


def status(directory: str | os.PathLike[str]) -> pd.DataFrame:
    """done / pending / failed counts per factor value (plus a total row)."""
    directory = Path(directory)
    plan_data = _require_plan(directory)
    states = store.run_status(directory, [r["id"] for r in plan_data["runs"]])
    rows = []
    for r in plan_data["runs"]:
        point = plan_data["points"][r["point"]]
        rows.append({**point["factors"], "status": states[r["id"]]})
    frame = pd.DataFrame(rows)
    out = []
    for factor in plan_data["factors"]:
        column = factor["column"]
        for value, group in frame.groupby(frame[column].map(str), sort=False):
            counts = group["status"].value_counts()
            out.append({"factor": factor["path"], "value": value, **{s: int(counts.get(s, 0)) for s in
                        ("done", "pending", "failed")}})  # fmt: skip
    counts = frame["status"].value_counts()
    out.append({"factor": "(all)", "value": "", **{s: int(counts.get(s, 0)) for s in ("done", "pending", "failed")}})
    return pd.DataFrame(out, columns=["factor", "value", "done", "pending", "failed"])
