"""CPU per run of a study's pipeline: the engine, the rest of the worker (run file and
catalog part) and the parent's share (the catalog part it prepares), on runs picked
evenly from a study's plan.

    python examples/bench/study_cpu.py [STUDY] [N]     # default: pam2025 60

Plans STUDY into a temporary directory (removed after), takes N of its runs spread evenly
over the plan (all panels), runs one first to warm up, then each in this process as a pool
worker would (``executors.execute_with_part``), timing with ``time.process_time``; the
parent's share is ``store.Prepared.add`` of each result. Prints milliseconds per run.
"""

from __future__ import annotations

import sys
import tempfile
import time


def main() -> None:
    from l4slab import engine
    from l4slab.study import executors, runs, store
    from l4slab.study.spec import load_study

    study = sys.argv[1] if len(sys.argv) > 1 else "pam2025"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    with tempfile.TemporaryDirectory() as tmp:
        _, plan = runs._write_plan(load_study(study), tmp)
    every = plan["runs"]
    tasks = [runs._task(plan, every[i * len(every) // n]) for i in range(n)]
    with_part = getattr(executors, "execute_with_part", None)  # builds before it: execute
    executors.execute(tasks[0])
    simulate, spent = engine.simulate, [0.0]

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return simulate(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start

    engine.simulate = timed
    prepared = store.Prepared(plan)
    worker = parent = 0.0
    for task in tasks:
        start = time.process_time()
        outcome = with_part(task) if with_part else (*executors.execute(task), None)
        worker += time.process_time() - start
        if outcome[3] is not None:
            raise SystemExit(f"run {outcome[0][:12]} failed: {outcome[3]}")
        start = time.process_time()
        if with_part:
            prepared.add(outcome[0], outcome[1], outcome[4])
        else:
            prepared.add(outcome[0], outcome[1])
        parent += time.process_time() - start
    ms = 1e3 / n
    print(f"{study}, {n} runs, ms per run: engine {spent[0] * ms:.1f}, worker rest {(worker - spent[0]) * ms:.1f}, "
          f"parent {parent * ms:.1f}, total {(worker + parent) * ms:.1f}")


if __name__ == "__main__":
    main()
