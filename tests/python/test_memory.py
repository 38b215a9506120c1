"""The memory bound bounds memory: a run's estimate (:mod:`l4slab.memory`) against the
peak resident memory it adds, measured in a child process, for each output kind at two
sizes; and the refusals before running (``--max-memory``, an address-space limit of
half the estimate) are one line, never an abort.

The peak is measured as ``l4slab run FILE --out DIR`` in a fresh interpreter that first
ran a short version of the same scenario (so lazily imported code is loaded), returned its
free heap pages (glibc ``malloc_trim``: otherwise free heap the warm-up left absorbs the
engine's small allocations, and the peak depends on what ran before), then reset its
high-water mark (``/proc/self/clear_refs`` 5): VmHWM - VmRSS before the run.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_here, l4slab_command, requires_engine
from study_texts import small_study

pytestmark = [requires_engine, pytest.mark.engine]

PROBE = r"""
import contextlib, gc, io, json, shutil, sys, tempfile
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
from l4slab.cli import main
from l4slab.scenario import load_scenario
from l4slab import memory
out = tempfile.mkdtemp()
with contextlib.redirect_stdout(io.StringIO()):
    main(["run", sys.argv[1], "--out", out, "--set", "duration=200ms", "--set", "bin=10ms"])
shutil.rmtree(out); gc.collect()
import ctypes; ctypes.CDLL(None).malloc_trim(0)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status("VmRSS")
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["run", sys.argv[1], "--out", out])
estimate = memory.estimate(load_scenario(sys.argv[1]).resolve())
print(json.dumps({"code": code, "peak": status("VmHWM") - base, "estimate": estimate.total,
                  "kind": estimate.largest()}))
shutil.rmtree(out)
"""

BASE = """
[bottleneck]
rate = "{rate}"
qdisc = "bfifo limit {limit}"
[[flows]]
cc = "cubic"
rtt = "10ms"
count = {flows}
"""

#: Each kind at two sizes (the second about twice the first), large enough that the
#: kind's memory dominates the process's fixed costs.
KINDS = {
    "bins": [('duration = "2s"\nbin = "10us"', "100Mbit", 2), ('duration = "4s"\nbin = "10us"', "100Mbit", 2)],
    "traces": [('duration = "12s"\nbin = "1s"\ntrace_sojourn = true', "1Gbit", 2),
               ('duration = "24s"\nbin = "1s"\ntrace_sojourn = true', "1Gbit", 2)],
    "captures": [('duration = "8s"\nbin = "1s"', "1Gbit", 2, 500_000), ('duration = "16s"\nbin = "1s"', "1Gbit", 2, 1_000_000)],
    "flows": [('duration = "1s"\nbin = "100ms"', "1Gbit", 4000), ('duration = "1s"\nbin = "100ms"', "1Gbit", 8000)],
    # Web requests at 400/s: 16 000 and 32 000 requests, one and two row groups of records.
    "records": [('duration = "40s"\nbin = "1s"', "100Mbit", 1, None, "400/s"),
                ('duration = "80s"\nbin = "1s"', "100Mbit", 1, None, "400/s")],
}  # fmt: skip


def scenario(tmp_path: Path, name: str, head: str, rate: str, flows: int, capture: int | None = None,
             web: str | None = None) -> Path:  # fmt: skip
    limit = 2_500_000 if rate == "1Gbit" else 250_000
    text = head + "\n" + BASE.format(rate=rate, limit=limit, flows=flows)
    if capture:
        text += f'[capture]\npoint = "bottleneck"\nmax_packets = {capture}\n'
    if web:
        text += f'[[sources]]\nkind = "web"\nrate = "{web}"\ncc = "cubic"\nrtt = "10ms"\n'
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def measure(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_estimate_is_the_measured_peak_within_25_percent(tmp_path, kind):
    ratios = []
    for size, spec in enumerate(KINDS[kind]):
        found = measure(scenario(tmp_path, f"{kind}{size}", *spec))
        assert found["code"] == 0 and found["kind"] == kind, found
        ratios.append(found["peak"] / found["estimate"])
        print(f"{kind} size {size}: peak {found['peak'] / 1e6:.0f} MB, estimate {found['estimate'] / 1e6:.0f} MB, "
              f"ratio {ratios[-1]:.2f}")  # fmt: skip
    assert all(0.8 <= r <= 1.25 for r in ratios), ratios


def test_records_below_a_row_group_are_not_underestimated(tmp_path):
    """Fewer requests than a row group: the estimate (one row group) is an upper bound."""
    found = measure(scenario(tmp_path, "web", 'duration = "10s"\nbin = "1s"', "100Mbit", 1, None, "400/s"))
    assert found["code"] == 0 and found["kind"] == "records" and found["peak"] <= 1.25 * found["estimate"], found


def _vm_size_after_imports() -> int:
    code = (
        "import l4slab.cli, l4slab.runner, l4slab.engine, pandas, pyarrow.parquet; l4slab.engine.version()\n"
        "print([int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize:')][0])"
    )
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


#: `l4slab run` with the check before running turned off: what the engine and the
#: pipeline do when memory runs out while the run is under way.
UNCHECKED = r"""
import sys
from l4slab import memory
memory.check = lambda config, max_memory=None: memory.estimate(config)
from l4slab.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_address_space_of_half_the_estimate_is_one_line(tmp_path, kind):
    """Under an address-space limit (RLIMIT_AS) that leaves the run half its estimate,
    `l4slab run` refuses before running: exit 2, one line. With that check off, the run
    fails where an allocation fails, in one line, exit 1: the engine's large buffers
    are reserved with allocations that may fail (`guard::try_vec`), any other engine
    allocation ends the process with one line (the binding's global allocator), and
    Python's MemoryError is one line; never an abort (134) or a traceback."""
    from l4slab import memory
    from l4slab.scenario import load_scenario

    path = scenario(tmp_path, kind, *KINDS[kind][0])
    need = memory.estimate(load_scenario(path).resolve()).total
    limit = _vm_size_after_imports() + need // 2

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = subprocess.run(l4slab_command("run", str(path), "--out", str(tmp_path / "out")), capture_output=True,
                          text=True, timeout=300, preexec_fn=cap)  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    if kind == "records" and proc.returncode == 1:
        # Half of the records' 22 MB is less than the address space `l4slab run` maps beyond
        # the probe's imports: the interpreter's MemoryError comes first, in one line.
        assert lines == ["l4slab: error: out of memory"], proc.stderr
    else:
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert len(lines) == 1 and lines[0].startswith("l4slab: error: memory: this run needs ~"), proc.stderr
        assert "left under the address-space limit (ulimit -v)" in lines[0] and f"({kind}: ~" in lines[0]
    assert not (tmp_path / "out" / "summary.json").exists()
    proc = subprocess.run([sys.executable, "-c", UNCHECKED, "run", str(path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, preexec_fn=cap)  # fmt: skip
    print(kind, proc.returncode, proc.stderr.strip())
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("l4slab: warning: ")]
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("l4slab: error: ") and "memory" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_address_space_limit_is_not_lifted_by_max_memory(tmp_path):
    from l4slab import memory
    from l4slab.scenario import load_scenario

    path = scenario(tmp_path, "bins", *KINDS["bins"][1])
    need = memory.estimate(load_scenario(path).resolve()).total
    limit = _vm_size_after_imports() + need // 2

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    # --max-memory lifts MemAvailable, not a hard limit.
    proc = subprocess.run(l4slab_command("run", str(path), "--max-memory", "1TB"), capture_output=True, text=True,
                          timeout=300, preexec_fn=cap)  # fmt: skip
    assert proc.returncode == 2 and "left under the address-space limit" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


def test_max_memory_refuses_before_running(tmp_path):
    path = scenario(tmp_path, "trace", *KINDS["traces"][1])
    proc = subprocess.run(l4slab_command("run", str(path), "--max-memory", "50MB"), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "allowed by --max-memory" in lines[0] and "turn trace_sojourn off" in lines[0]
    for bad in ("lots", "-1GB", "5XB"):
        proc = subprocess.run(l4slab_command("run", str(path), "--max-memory", bad), capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--max-memory:" in proc.stderr, proc.stderr


def test_an_ordinary_run_fits():
    from l4slab import memory
    from l4slab.scenario import load_scenario, reference_scenario_path

    found = memory.check(load_scenario(Path(str(reference_scenario_path()))).resolve())
    assert found.total < 100e6




def test_study_max_memory_refuses_before_running(tmp_path):
    """`study run --max-memory`: the runs that run at once (--jobs of them) together
    must fit; refused in one line before any run, the plan written and no run file."""
    from conftest import one_line_error

    from l4slab import memory
    from l4slab.study.spec import load_study

    path = tmp_path / "study.toml"
    path.write_text(small_study("memory", 1, "1s", "10us"), encoding="utf-8")
    one = memory.estimate(load_study(path).points[0].config).total
    out = tmp_path / "out"
    # Two at once need twice one run: a bound between one and two runs refuses --jobs 2.
    bound = str(int(1.5 * one))
    proc = cli_here("study", "run", str(path), "--out", str(out), "--jobs", "2", "--max-memory", bound, "--no-progress")
    line = one_line_error(proc)
    assert "2 runs at once (--jobs 2) need ~" in line and "allowed by --max-memory" in line, line
    assert "use fewer --jobs or use wider bins" in line, line
    assert not list(out.glob("runs/*.parquet"))
    # One at a time fits the same bound; run-one checks its own run.
    proc = cli_here("study", "run", str(path), "--out", str(out), "--jobs", "1", "--max-memory", bound, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    rid = json.loads((out / "plan.json").read_text())["runs"][0]["id"]
    proc = cli_here("study", "run-one", str(out), rid, "--force", "--max-memory", "10MB")
    line = one_line_error(proc)
    assert line.startswith("l4slab: error: memory: this run needs ~") and "allowed by --max-memory" in line, line
    for bad in ("lots", "0"):
        proc = cli_here("study", "run", str(path), "--out", str(out), "--max-memory", bad)
        assert "--max-memory:" in one_line_error(proc)


def test_study_workers_check_their_run_when_it_starts(tmp_path, monkeypatch):
    """A worker checks its run against what is available when it starts: a run the bound
    refuses is a failed run with the one-line reason, never an abort."""
    from l4slab.study.executors import execute

    monkeypatch.setenv("L4SLAB_MAX_MEMORY", "1kB")
    from l4slab.study import runs
    from l4slab.study.spec import load_study

    path = tmp_path / "study.toml"
    path.write_text(small_study("memory", 2, "200ms", "10ms"), encoding="utf-8")
    directory, plan = runs._write_plan(load_study(path), tmp_path / "out", False)
    rid, data, _, error = execute(runs._task(plan, plan["runs"][0]))
    assert data is None and error.startswith("memory: this run needs ~") and "allowed by --max-memory" in error
