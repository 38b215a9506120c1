"""Running a study's pending runs: a local process pool or a Dask cluster.

Workers only compute: :func:`execute` simulates one run and returns its Parquet file
as bytes; the parent process is the only writer of ``runs/<id>.parquet`` (atomic
rename), so a crash at any moment leaves either a complete file or none, and a
re-run resumes with what is missing. ``l4slab study run-one DIR ID`` (one run per
process, e.g. a SLURM array task) writes its own file, again atomically.

Executors (``--executor``):

* ``local`` (default): ``concurrent.futures.ProcessPoolExecutor`` with ``--jobs``
  processes (default: every core);
* ``dask-local``: a ``dask.distributed.LocalCluster`` of ``--jobs`` single-threaded
  worker processes;
* ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``): an existing Dask scheduler, e.g. one
  started by ``dask-jobqueue``'s ``SLURMCluster``; workers need l4slab installed but
  no shared file system (results come back to this process).
"""

from __future__ import annotations

import os
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Mapping

from ..errors import EngineError, ScenarioError

__all__ = ["execute", "run_local", "run_dask", "parse_executor"]

#: A finished task: (run id, Parquet bytes or None, wall seconds, error or None).
Outcome = tuple[str, "bytes | None", float, "str | None"]


def execute(task: Mapping[str, Any]) -> Outcome:
    """Simulate one run (``task``: id, config, scenario data, meta) and serialise it."""
    from .. import engine
    from ..results import RunResult
    from ..scenario import scenario_from_dict
    from ..version import PACKAGE_VERSION
    from .store import run_file_bytes

    rid = task["id"]
    started = time.perf_counter()
    try:
        version = engine.version()
        if version != task["engine_version"]:
            raise EngineError(f"engine {version} differs from the plan's {task['engine_version']}; re-plan the study")
        scenario = scenario_from_dict({**task["scenario"], "seed": task["config"]["seed"]})
        raw, wall_s = engine.simulate(task["config"])
        result = RunResult(scenario=scenario, config=task["config"], raw=raw, wall_s=wall_s, engine_version=version)
        meta = {**task["meta"], "wall_s": wall_s, "engine_version": version, "l4slab_version": PACKAGE_VERSION}
        return rid, run_file_bytes(result, meta), wall_s, None
    except (EngineError, ScenarioError) as err:
        return rid, None, time.perf_counter() - started, str(err)
    except Exception as err:  # noqa: BLE001 - one failed run must not stop a study
        last = traceback.extract_tb(err.__traceback__)[-1:]
        where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
        return rid, None, time.perf_counter() - started, f"{type(err).__name__}: {err}{where}"


def parse_executor(spec: str | None) -> tuple[str, str | None]:
    """``local`` | ``dask-local`` | ``dask://HOST:PORT`` → (kind, address)."""
    if spec in (None, "", "local"):
        return "local", None
    if spec == "dask-local":
        return "dask-local", None
    for scheme in ("dask://", "tcp://", "tls://"):
        if spec.startswith(scheme) and len(spec) > len(scheme):
            return "dask", ("tcp://" if scheme == "dask://" else scheme) + spec[len(scheme) :]
    raise ScenarioError(f"--executor: {spec!r} is not local, dask-local or dask://HOST:PORT")


def run_local(tasks: list[dict[str, Any]], jobs: int | None, on_done: Callable[[Outcome], None]) -> None:
    """Run ``tasks`` in a process pool, calling ``on_done`` in this process as each ends."""
    if not tasks:
        return
    workers = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(execute, task) for task in tasks]
        for future in as_completed(futures):
            on_done(future.result())
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _dask():
    try:
        import dask.distributed as distributed
    except ImportError:
        raise ScenarioError(
            "--executor: dask is not installed; pip install 'l4slab[cluster]' (dask[distributed])"
        ) from None
    return distributed


def run_dask(
    tasks: list[dict[str, Any]],
    address: str | None,
    jobs: int | None,
    on_done: Callable[[Outcome], None],
) -> None:
    """Run ``tasks`` on a Dask cluster: ``address`` of a scheduler, or a LocalCluster."""
    if not tasks:
        return
    distributed = _dask()
    cluster = None
    if address is None:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = distributed.Client(cluster)
    else:
        try:
            client = distributed.Client(address, timeout=30)
        except OSError as err:
            raise ScenarioError(f"--executor: cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        futures = [client.submit(execute, task, key=f"l4slab-run-{task['id']}", pure=False) for task in tasks]
        for future in distributed.as_completed(futures):
            on_done(future.result())
            future.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
