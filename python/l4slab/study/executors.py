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

__all__ = ["execute", "execute_with_part", "run_local", "run_dask", "run_sequential", "parse_executor", "worker_count"]

#: A finished task: (run id, Parquet bytes or None, wall seconds, error or None).
Outcome = tuple[str, "bytes | None", float, "str | None"]
#: What a worker of ``study run`` returns: an :data:`Outcome` and the run's catalog part
#: (:func:`l4slab.study.store.catalog_part`, None for a failed run), taken in the worker
#: from the table its bytes encode, so that the parent does not decode the file again.
Finished = tuple[str, "bytes | None", float, "str | None", Any]


def _identity(task: Mapping[str, Any]) -> dict[str, Any]:
    """The run's identity, checked: this engine's model is the task's, and the task's id
    is the hash of its config, that model and its backend (:func:`spec.run_id`); the
    config's digest goes into the run file so that every reader can recompute the id."""
    from .. import schema
    from .spec import config_digest, id_from_digest

    if schema.model_id() != task["model"]:
        raise EngineError(
            f"engine model {schema.model_version()} differs from the plan's ({task['meta'].get('model_version')}); "
            "re-plan the study with `l4slab study run`"
        )
    digest = config_digest(task["config"])
    if id_from_digest(digest, task["model"], task["backend"], task["guest"]) != task["id"]:
        raise EngineError(f"run {task['id'][:12]}: its id is not the hash of its config, model and backend")
    return {**task["meta"], "config_sha256": digest}


def execute(task: Mapping[str, Any]) -> Outcome:
    """Simulate one run (``task``: id, config, scenario data, meta) and serialise it."""
    return execute_with_part(task)[:4]


def execute_with_part(task: Mapping[str, Any]) -> Finished:
    """:func:`execute`, and the run's catalog part beside its bytes."""
    from .. import engine, memory
    from ..results import RunResult
    from ..scenario import scenario_from_dict
    from ..version import PACKAGE_VERSION

    rid = task["id"]
    started = time.perf_counter()
    if task.get("backend", "sim") == "emulate":
        return _execute_emulated(task)
    if task.get("backend", "sim") == "kernel":
        return _execute_kernel(task)
    try:
        identity = _identity(task)
        # What is available when this run starts (other workers' runs included).
        memory.check(task["config"], task.get("max_memory"))
        version = engine.version()
        scenario = scenario_from_dict({**task["scenario"], "seed": task["config"]["seed"]})
        raw, wall_s = engine.simulate(task["config"])
        result = RunResult(scenario=scenario, config=task["config"], raw=raw, wall_s=wall_s, engine_version=version,
                           model_version=task["meta"].get("model_version"))
        meta = {**identity, "wall_s": wall_s, "engine_version": version, "l4slab_version": PACKAGE_VERSION}
        data, part = _serialised(result, meta)
        return rid, data, wall_s, None, part
    except Exception as err:  # noqa: BLE001 - one failed run must not stop a study
        return rid, None, time.perf_counter() - started, _failure(err), None


def _serialised(result: Any, meta: Mapping[str, Any]) -> tuple[bytes, Any]:
    """The run file's bytes and the catalog part of the table they encode."""
    from .store import run_file_with_part

    data, _, part = run_file_with_part(result, meta)
    return data, part


def _failure(err: Exception) -> str:
    """A failed run's one-line reason: the message of an input or engine error, else the
    exception's type and message with the line it came from."""
    if isinstance(err, (EngineError, ScenarioError)):
        return str(err)
    last = traceback.extract_tb(err.__traceback__)[-1:]
    where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
    return f"{type(err).__name__}: {err}{where}"


def _execute_emulated(task: Mapping[str, Any]) -> Finished:
    """One emulated run (``l4slab.emulate``): real kernel TCP through the emulator. A run the
    host did not keep up with is a failed run (retried by the next ``study run``)."""
    from ..emulate import emulate

    return _execute_backend(task, emulate)


def _execute_kernel(task: Mapping[str, Any]) -> Finished:
    """One kernel-backend run (``l4slab.kernel``): the scenario in its own guest. A guest
    that fails is a failed run (retried by the next ``study run``)."""
    from ..kernel.run import run_kernel

    return _execute_backend(task, run_kernel)


def _execute_backend(task: Mapping[str, Any], backend_run: Callable[[Any], Any]) -> Finished:
    """One run on a backend other than the engine: ``backend_run(scenario)`` returns its
    :class:`~l4slab.results.BackendRunResult`, whose summary block (the emulator's error,
    the guest's kernel) the run file's meta carries; an exception is a failed run."""
    from ..scenario import scenario_from_dict
    from ..version import PACKAGE_VERSION

    rid = task["id"]
    started = time.perf_counter()
    try:
        identity = _identity(task)
        scenario = scenario_from_dict({**task["scenario"], "seed": task["config"]["seed"]})
        result = backend_run(scenario)
        wall_s = time.perf_counter() - started
        meta = {**identity, "wall_s": wall_s, "engine_version": result.engine_version,
                "l4slab_version": PACKAGE_VERSION, result.block: result.summary.get(result.block)}  # fmt: skip
        data, part = _serialised(result, meta)
        return rid, data, wall_s, None, part
    except Exception as err:  # noqa: BLE001 - one failed run must not stop a study
        return rid, None, time.perf_counter() - started, _failure(err), None


def run_sequential(tasks: list[dict[str, Any]], on_done: Callable[[Finished], None]) -> None:
    """Every task in this process, one after another (emulated runs use real time and the
    host's network namespaces: never two at once)."""
    for task in tasks:
        on_done(execute_with_part(task))


PR_SET_PDEATHSIG = 1  # include/uapi/linux/prctl.h


def die_with_parent(parent_pid: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies
    (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, Linux; elsewhere a no-op), and exit at once
    if the parent is already gone (it may have died before the call)."""
    import ctypes
    import ctypes.util
    import signal

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown is all there is
        return
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def worker_init(parent_pid: int, lock_fd: int | None) -> None:
    """Initializer of every pool worker: die with the parent (a SIGKILLed ``study run``
    leaves no idle workers holding its stdout/stderr), and close the
    inherited copy of the study lock's descriptor (the lock is the parent's alone)."""
    die_with_parent(parent_pid)
    if lock_fd is not None:
        try:
            os.close(lock_fd)
        except OSError:
            pass


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


def worker_count(jobs: int | None, tasks: int) -> int:
    """Processes that run ``tasks`` at once: ``--jobs``, else every core, no more than the tasks."""
    return max(1, min(jobs or os.cpu_count() or 1, tasks))


def run_local(tasks: list[dict[str, Any]], jobs: int | None, on_done: Callable[[Finished], None]) -> None:
    """Run ``tasks`` in a process pool, calling ``on_done`` in this process as each ends."""
    if not tasks:
        return
    from .lock import held_fd

    workers = worker_count(jobs, len(tasks))
    # Workers are started from this (the main) thread: PR_SET_PDEATHSIG fires when the
    # thread that forked them ends, i.e. when this process does.
    pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_init, initargs=(os.getpid(), held_fd()))
    try:
        futures = [pool.submit(execute_with_part, task) for task in tasks]
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
    on_done: Callable[[Finished], None],
) -> None:
    """Run ``tasks`` on a Dask cluster: ``address`` of a scheduler, or a LocalCluster."""
    if not tasks:
        return
    distributed = _dask()
    cluster = None
    if address is None:
        workers = worker_count(jobs, len(tasks))
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
        if cluster is not None:
            # LocalCluster's worker processes are children of this process: make them die
            # with it (its nannies live in this process and die with it anyway).
            client.run(die_with_parent)
        futures = [client.submit(execute_with_part, task, key=f"l4slab-run-{task['id']}", pure=False) for task in tasks]
        for future in distributed.as_completed(futures):
            on_done(future.result())
            future.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
