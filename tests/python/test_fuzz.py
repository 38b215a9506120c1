"""Property-based fuzzing of the scenario loader, the study loader and
the CLI: on any input, a result or one :class:`ScenarioError` line naming a field —
never another exception, never a traceback, never a hang beyond the bounds.

Inputs are the reference scenario and a small study with random edits (tokens that
broke loaders before: NaN, infinities, 5 000-digit numbers, NUL, deep nesting, huge
counts and trials, escaping names) plus random structured values at real keys.
The default suite runs a few hundred examples; ``L4SLAB_FUZZ=full`` runs the
acceptance campaign (100 000 scenarios, 20 000 studies, 1 000 CLI invocations) and
prints counts and times.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import requires_engine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from l4slab.errors import EngineError, ScenarioError
from study_texts import small_study

pytestmark = [requires_engine, pytest.mark.engine]

FULL = os.environ.get("L4SLAB_FUZZ") == "full"
SCENARIOS = 100_000 if FULL else 300
STUDIES = 20_000 if FULL else 60
INVOCATIONS = 1_000 if FULL else 40
#: An input that takes longer than this to accept or refuse is a hang (a CLI invocation
#: may run a 200 ms scenario or a 2-run study on a busy machine).
BOUND_S = 30.0

SCENARIO = """name = "fuzz"
duration = "200ms"
seed = 3
bin = "50ms"
[bottleneck]
rate = "10Mbit"
qdisc = "dualpi2"
buffer = "2bdp"
[[flows]]
cc = "prague"
rtt = "10ms"
count = 2
cc_params = { }
[[flows]]
kind = "udp"
rate = "10%"
rtt = "10ms"
"""

STUDY = small_study("fz", 2, "200ms", seed=4, qdisc="fq_codel",
                    factors={"flows.0.cc": ["cubic", "reno"], "bottleneck.rate": ["10Mbit", "20Mbit"]})

TOKENS = [
    "nan", "inf", "-inf", "+inf", "1e999", "9" * 5000, "-" + "9" * 4400, "\0", "[", "]", "{", "}", "=", '"', "'",
    "\n", "0", "-1", "18446744073709551616", "4611686018427387904", '"1ns"', '"1000s"', '"1e9s"', '"0"', "1e9",
    "count = 1000000000\n", "trials = 9223372036854775807\n", "[[flows]]\n", "[" * 3000, "{a=" * 500,
    '"' + "x" * 20000 + '"', '".."', '"../x"', '"a\\u0000b"', "true", '"@pam2025.queues"', "[nan]", "[inf, 1]",
    '"10Mbit"', '"-5ms"', "0.0", "1.5", '"100%"', '"pie limit 10 tarrget 5ms"', '"bfifo limit 1"', "\u202e", "#",
]  # fmt: skip


VALUES = [
    '"1s"', '"100ms"', '"0s"', "1", "0", "3", '"5Mbit"', '"1Gbit"', '"0.5bdp"', '"pfifo"', '"codel"', '"pie"',
    '"reno"', '"dctcp"', '"bbr"', "true", "false", '["cubic"]', '["1bdp", "2bdp"]', "16384", "16385",
]  # fmt: skip


def _edits(base: str):
    """Raw edits anywhere (positions in the text), or a value replaced on a ``key = value`` line."""
    lines = base.count("\n") + 1
    token = st.one_of(st.sampled_from(TOKENS), st.sampled_from(VALUES), st.text(max_size=12))
    raw = st.tuples(st.just("raw"), st.integers(0, len(base)), st.integers(0, 8), token)
    value = st.tuples(st.just("value"), st.integers(0, lines - 1), st.just(0), token)
    return st.lists(raw | value | value, min_size=1, max_size=3)


def _apply(base: str, edits) -> str:
    text = base
    for kind, position, cut, token in edits:
        if kind == "value":
            lines = text.split("\n")
            line = lines[min(position, len(lines) - 1)]
            if "=" in line:
                lines[min(position, len(lines) - 1)] = line.split("=", 1)[0] + "= " + token
            text = "\n".join(lines)
            continue
        position = min(position, len(text))
        text = text[:position] + token + text[position + cut :]
    return text


def _one_line(err: Exception) -> None:
    message = str(err)
    assert message and "\n" not in message, message
    assert "Traceback" not in message
    assert len(message) < 2000, message[:200]


class Stats:
    def __init__(self, name: str):
        self.name, self.count, self.accepted, self.worst, self.started = name, 0, 0, 0.0, time.perf_counter()

    def record(self, started: float, accepted: bool) -> None:
        elapsed = time.perf_counter() - started
        self.count += 1
        self.accepted += accepted
        self.worst = max(self.worst, elapsed)
        assert elapsed < BOUND_S, f"{self.name}: an input took {elapsed:.1f} s"

    def report(self) -> None:
        took = time.perf_counter() - self.started
        print(
            f"{self.name}: {self.count} inputs in {took:.1f} s, {self.accepted} accepted, the rest refused "
            f"on one line; slowest {self.worst * 1000:.0f} ms"
        )


def _structured():
    leaf = st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.sampled_from(TOKENS),
    )  # fmt: skip
    value = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8),
                                                                                           inner, max_size=3),
                         max_leaves=8)  # fmt: skip
    key = st.sampled_from(["duration", "bin", "seed", "start_jitter", "warmup", "name", "bottleneck.rate",
                           "bottleneck.qdisc", "bottleneck.buffer", "flows.0.count", "flows.0.cc", "flows.0.rtt",
                           "flows.0.cc_params", "flows.1.rate", "flows.0.init_cwnd", "flows.2.cc"])  # fmt: skip
    return st.dictionaries(key, value, min_size=1, max_size=3)


def test_fuzz_scenario_loader():
    from l4slab import engine
    from l4slab.scenario import apply_overrides, scenario_from_dict, scenario_from_toml
    from l4slab.scenario.load import _parse_toml

    stats = Stats("scenario")
    base = _parse_toml(SCENARIO, "scenario")

    def check(load) -> None:
        started = time.perf_counter()
        accepted = False
        try:
            scenario = load()
            config = scenario.resolve()
            engine.check(config)
            accepted = True
        except (ScenarioError, EngineError) as err:
            _one_line(err)
        stats.record(started, accepted)

    @settings(max_examples=SCENARIOS // 2, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(_edits(SCENARIO))
    def text(edits):
        check(lambda: scenario_from_toml(_apply(SCENARIO, edits)))

    @settings(max_examples=SCENARIOS // 2, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(_structured())
    def structured(overrides):
        check(lambda: scenario_from_dict(apply_overrides(base, overrides)))

    text()
    structured()
    stats.report()
    assert stats.count >= SCENARIOS


def test_fuzz_study_loader(tmp_path):
    from l4slab.scenario.load import _parse_toml
    from l4slab.study.spec import study_from_dict

    stats = Stats("study")

    @settings(max_examples=STUDIES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(_edits(STUDY))
    def study(edits):
        started = time.perf_counter()
        accepted = False
        try:
            spec = study_from_dict(_parse_toml(_apply(STUDY, edits), "study"), root=tmp_path)
            assert 1 <= len(spec.runs) <= 200_000
            assert "/" not in spec.name and "\0" not in spec.name and not spec.name.startswith(".")  # no '..'
            assert (Path("results") / spec.name).resolve().parent == Path("results").resolve()
            accepted = True
        except ScenarioError as err:
            _one_line(err)
        stats.record(started, accepted)

    study()
    stats.report()
    assert stats.count >= STUDIES


def _cli_fixtures(root: Path) -> dict[str, list[str]]:
    """Files and directories the CLI fuzzer picks its arguments from."""
    import l4slab.study as study

    (root / "ok.toml").write_text(SCENARIO)
    (root / "bad.toml").write_text(SCENARIO.replace('"10Mbit"', "nan"))
    (root / "study.toml").write_text(STUDY.replace("trials = 2", "trials = 1").replace(', "20Mbit"', ""))
    (root / "file.txt").write_text("x")
    # Scenarios the emulator must refuse before anything starts (no draw is emulatable:
    # the reference scenario would run 60 s of real traffic): prague and a UDP flow
    # (ok.toml), a CC the kernel lacks, fq_pacing (needs fq on the sender host), a web source.
    cubic = 'name = "e"\nduration = "1s"\n[bottleneck]\nrate = "10Mbit"\nqdisc = "pie"\n[[flows]]\nrtt = "10ms"\n'
    (root / "emu_nocc.toml").write_text(cubic + 'cc = "bbr2"\n')
    (root / "emu_fq.toml").write_text(cubic + 'cc = "cubic"\nfq_pacing = true\n')
    (root / "emu_web.toml").write_text(cubic + 'cc = "cubic"\n[[sources]]\nkind = "web"\nrate = "5/s"\n')
    done = root / "done"
    study.run(root / "study.toml", done, jobs=1)
    broken = root / "broken"
    broken.mkdir()
    (broken / "plan.json").write_text('{"runs": [')
    rid = sorted((done / "runs").glob("*.parquet"))[0].stem
    return {
        "path": [str(root / n) for n in ("ok.toml", "bad.toml", "study.toml", "file.txt", "missing.toml")]
        + [
            str(root),
            "",
            "\0",
            "../" * 40,
            "x" * 5000,
            str(Path(__file__).resolve().parents[2] / "examples" / "reference.toml"),
        ],
        "emu_path": [
            str(root / n)
            for n in (
                "ok.toml",
                "bad.toml",
                "study.toml",
                "file.txt",
                "missing.toml",
                "emu_nocc.toml",
                "emu_fq.toml",
                "emu_web.toml",
            )
        ]
        + [str(root), "", "\0", "x" * 5000],
        "dir": [str(done), str(broken), str(root / "file.txt"), str(root / "nowhere"), "", "/proc/self"],
        "out": [str(root / "out"), "", str(root / "file.txt"), "/proc/l4slab/x", str(root / "file.txt" / "x")],
        "id": [rid, "../../escaped", "0" * 64, "", "x" * 300],
        "sql": [
            "SELECT * FROM runs",
            "SELECT * FROM nope",
            "DROP TABLE runs",
            "SELECT count(*) FROM flow_series",
            "",
            "SELECT 1/0",
            "\0",
        ],  # fmt: skip
        "set": [
            "duration=100ms",
            "bin=1ns",
            "flows[0].count=99999999",
            "seed=" + "9" * 5000,
            "bottleneck.rate=nan",
            "nope",
            "=",
            "flows[9].cc=reno",
            "start_jitter=1h",
            "name=" + "x" * 20000,
        ],  # fmt: skip
    }


def _argv(draw, pools: dict[str, list[str]]) -> list[str]:
    pick = lambda kind: draw(st.sampled_from(pools[kind]) | st.text(max_size=10))  # noqa: E731
    command = draw(st.sampled_from(["run", "study run", "study status", "study report", "study run-one", "query",
                                    "study list", "study", "nope", "--version", "emulate", "compare"]))  # fmt: skip
    argv = command.split()
    if command == "run":
        argv += [pick("path")]
        for _ in range(draw(st.integers(0, 2))):
            argv += [draw(st.sampled_from(["--set", "--out", "--seed"])), pick("set")]
        if "--out" not in argv:
            argv += ["--out", pick("out")]
    elif command == "study run":
        argv += [pick("path"), "--jobs", draw(st.sampled_from(["1", "0", "-3", "x"])), "--no-progress"]
        executor = draw(st.sampled_from(["local", "dask://", "nope"]))
        argv += draw(
            st.sampled_from([[], ["--out", pick("out")], ["--emit-jobs", pick("out")], ["--executor", executor]])
        )
    elif command == "study status":
        argv += [pick("dir")]
    elif command == "study report":  # a real report (figures) takes ~10 s: broken directories only
        argv += [draw(st.sampled_from(pools["dir"][1:]) | st.text(max_size=10))]
    elif command == "study run-one":
        argv += [pick("dir"), pick("id")]
    elif command in ("emulate", "compare"):
        argv += [pick("emu_path")]
        flags = ["--set", "--out", "--seed"]
        if command == "compare":
            flags += ["--trials", "--json", "--csv", "--no-align"]
        for _ in range(draw(st.integers(0, 2))):
            flag = draw(st.sampled_from(flags))
            if flag == "--no-align":
                argv += [flag]
            elif flag == "--trials":
                argv += [flag, draw(st.sampled_from(["1", "0", "-1", "101", "x", "5"]))]
            else:
                argv += [flag, pick("set" if flag in ("--set", "--seed") else "out")]
    elif command == "query":
        argv += [pick("dir"), pick("sql")] + draw(st.sampled_from([[], ["--csv"]]))
    if draw(st.booleans()) and draw(st.booleans()):
        argv.insert(draw(st.integers(0, len(argv))), draw(st.text(max_size=6)))
    return argv


def _emu_leftovers(prefix: str) -> list[str]:
    """Namespaces with the fuzz prefix (none may exist after a refused emulate/compare)."""
    import shutil
    import subprocess

    if shutil.which("ip") is None:
        return []
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith(f"{prefix}-")]


def test_fuzz_cli(tmp_path, capsys, monkeypatch):
    import subprocess

    import l4slab.emulate.run as emulate_run
    from l4slab.cli import main

    # `emulate`/`compare` draws are all bad input: refused on one line, exit 2, before the
    # emulator or any tool is started. A start would be a failure, so none can happen.
    started: list[list[str]] = []

    class _NoStart:
        def __init__(self, args, *_a, **_k):
            started.append(list(args))
            raise OSError("the fuzz test does not start processes from emulate/compare")

    class _Subprocess:  # the module as emulate/run.py sees it, with Popen refusing
        Popen = _NoStart

        def __getattr__(self, name):
            return getattr(subprocess, name)

    monkeypatch.setattr(emulate_run, "subprocess", _Subprocess())
    prefix = "l4sfz"
    monkeypatch.setenv("L4SLAB_EMU_PREFIX", prefix)

    pools = _cli_fixtures(tmp_path)
    # Relative paths the fuzzer makes up (e.g. --out with random text) land in a scratch
    # directory, never in the repository.
    scratch = tmp_path / "cwd"
    scratch.mkdir()
    monkeypatch.chdir(scratch)
    stats = Stats("cli")
    codes: dict[int, int] = {}

    @settings(max_examples=INVOCATIONS, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def invoke(data):
        argv = _argv(data.draw, pools)
        capsys.readouterr()
        begun = time.perf_counter()
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse: --version, --help, usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
        err = capsys.readouterr().err
        codes[code] = codes.get(code, 0) + 1
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err and "internal error" not in err, (argv, err)
        lines = err.strip().splitlines()
        assert all(line.startswith("l4slab: ") for line in lines), (argv, err[:500])
        if code == 2:
            assert len(lines) == 1, (argv, err[:500])
        assert not started, (argv, started)  # nothing started, whatever was drawn
        if argv and argv[0] in ("emulate", "compare"):
            assert code in (0, 2), (argv, code, err)  # refused as bad input (0: --help)
        stats.record(begun, code == 0)

    invoke()
    stats.report()
    print(f"cli exit codes: {dict(sorted(codes.items()))}")
    assert not started and _emu_leftovers(prefix) == []
    assert stats.count >= INVOCATIONS
