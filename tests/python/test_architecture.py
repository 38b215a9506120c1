"""The package's shape: every module imports, no import cycle, one door to the engine,
the study registry, and the engine schema as the single source of what studies accept."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import python_c
from l4slab import schema
from l4slab.errors import ScenarioError

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "l4slab"
#: Built-in studies' report.py files are loaded by path (study names hold '-').
STUDY_FOLDERS = PACKAGE / "studies"


def _module_name(path: Path) -> str:
    parts = ["l4slab", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """Every l4slab module ``name`` imports, at any depth of the file (functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
    return {target for target in found if target == "l4slab" or target.startswith("l4slab.")}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = {*modules, "l4slab._core"}  # the compiled engine is a module too
    return {name: _imports(name, path, known) for name, path in modules.items()}


def test_every_module_imports():
    for name, path in _modules().items():
        if STUDY_FOLDERS in path.parents or name == "l4slab.__main__":
            continue  # loaded through the registry (test_builtin_report_sections_load); `python -m l4slab` (test_cli)
        importlib.import_module(name)


def test_the_import_graph_has_no_cycle():
    graph = _graph()
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [target] if target in path else [node, target]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, [*path, target])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_only_engine_py_imports_the_compiled_core():
    importers = sorted(name for name, targets in _graph().items() if "l4slab._core" in targets)
    assert importers == ["l4slab.engine"]


#: Libraries the answering commands (``--version``, ``--help``, ``study list``, ``study show``)
#: must not load: each costs a loaded machine seconds (``python -X importtime -m l4slab ...``).
DATA_STACK = ("pandas", "pyarrow", "duckdb", "matplotlib", "numpy", "scipy")


@pytest.mark.parametrize(
    "argv,needs_core",
    [(["--version"], False), (["--help"], False), (["study", "list"], False),
     (["study", "show", "pam2025"], True), (["study", "show", "dualq-multiflow"], True)],
)  # fmt: skip
def test_commands_that_answer_at_once_start_without_the_data_stack(argv, needs_core):
    """What these commands import is the deterministic part of their speed: none loads the
    data stack, and only ``study show`` (which resolves scenarios) the compiled engine. The
    wall-time bound is generous (a loaded 2-core machine); the modules catch a heavy import."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "l4slab", *argv], capture_output=True, text=True, timeout=60
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "l4slab.cli" in imported
    loaded = sorted({name.split(".")[0] for name in imported} & set(DATA_STACK))
    assert loaded == [], f"l4slab {' '.join(argv)} imports {loaded}"
    if not needs_core:
        assert "l4slab._core" not in imported, f"l4slab {' '.join(argv)} loads the compiled engine"
    if argv == ["--version"]:
        assert done.stdout.startswith("l4slab ")
    # Bounds for a 2-core machine running the other half of the test suite beside this one.
    assert elapsed < (2.0 if not needs_core else 8.0), f"l4slab {' '.join(argv)} took {elapsed:.2f} s"


def test_a_bare_import_reaches_every_top_level_name_and_subpackage():
    code = (
        "import l4slab\n"
        "assert callable(l4slab.run) and callable(l4slab.study.load) and callable(l4slab.analysis.flow_class)\n"
        "assert all(getattr(l4slab, name) is not None for name in l4slab.__all__)\n"
        "assert set(l4slab.__all__) <= set(dir(l4slab))\n"
        "try:\n    l4slab.nope\nexcept AttributeError as err:\n    print(err)\n"
    )
    done = python_c(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "module 'l4slab' has no attribute 'nope'\n"


def test_the_core_stub_matches_the_binding():
    """``_core.pyi`` declares exactly the binding's functions, with their parameter names."""
    import inspect

    core = importlib.import_module("l4slab._core")
    stub = ast.parse((PACKAGE / "_core.pyi").read_text(encoding="utf-8"))
    functions = [node for node in stub.body if isinstance(node, ast.FunctionDef)]
    stubbed = {node.name: [arg.arg for arg in node.args.args] for node in functions}
    bound = {name: list(inspect.signature(getattr(core, name)).parameters) for name in dir(core) if name[0] != "_"}
    assert stubbed == bound


def test_study_list_lists_the_study_folders(capsys):
    from l4slab.cli import main

    folders = sorted(p.name for p in STUDY_FOLDERS.iterdir() if (p / "study.toml").is_file())
    assert {
        "demo",
        "pam2025",
        "pam2025-prague-cubic",
        "s2-segment-sizing",
        "s2-syn-flood",
        "dualq-basic",
        "dualq-web",
        "coexistence",
    } <= set(folders)
    assert main(["study", "list"]) == 0
    assert capsys.readouterr().out.split() == folders


def test_builtin_report_sections_load():
    from l4slab.study import registry

    assert [s.__name__ for s in registry.report_sections("pam2025-prague-cubic")] == ["pam_section"]
    assert [s.__name__ for s in registry.report_sections("demo")] == ["cwnd_section", "sojourn_section"]
    assert [s.__name__ for s in registry.report_sections("s2-segment-sizing")] == ["segment_sizing_section"]
    assert registry.report_sections("differential") == ()
    assert registry.report_sections(None) == ()
    assert set(registry.presets()) == {"pam2025.queues", "pam2025.testbed"}


STUDY = """
[study]
{study}
[base]
duration = "1s"
[base.bottleneck]
rate = "10Mbit"
[[base.flows]]
rtt = "10ms"
[factors]
"bottleneck.buffer" = ["1bdp"]
"""


def _study(tmp_path, study_table: str):
    from l4slab.study import load_study

    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(study=study_table))
    return load_study(path)


def test_report_sections_come_from_the_registry_not_from_columns(tmp_path):
    from l4slab.study import load_study

    assert load_study("pam2025-prague-cubic").report == "pam2025-prague-cubic"
    assert load_study("demo").report == "demo"
    assert _study(tmp_path, 'name = "mine"').report is None
    assert _study(tmp_path, 'report = "pam2025-prague-cubic"').report == "pam2025-prague-cubic"
    with pytest.raises(ScenarioError, match=r"^study\.report: 'pam' is not a built-in study; built-in: (.*, )?demo, "):
        _study(tmp_path, 'report = "pam"')


def test_studies_accept_every_summary_metric_the_engine_produces(tmp_path):
    """A metric the engine adds to its results is accepted by ``[study] metrics`` at once."""
    from l4slab.study.summary import check_metrics, known_metrics

    engine_metrics = [*schema.metric_names("flow_summary"), *schema.metric_names("bottleneck_summary")]
    assert "mean_payload_bytes" in engine_metrics
    assert set(engine_metrics) <= known_metrics()
    check_metrics(engine_metrics)
    assert _study(tmp_path, 'metrics = ["mean_payload_bytes", "goodput_efficiency"]').metrics == [
        "mean_payload_bytes",
        "goodput_efficiency",
    ]


def test_the_engine_schema_has_the_shape_the_front_end_reads():
    """The compiled engine's own schema parses, and names what the front end looks up."""
    import l4slab.engine

    text = l4slab.engine.schema_json()
    parsed = schema.parse_schema(text)
    assert parsed == schema.engine_schema()
    assert parsed.version == l4slab.engine.version() == json.loads(text)["version"]
    assert set(parsed.metrics) == {"flow_summary", "flow_series", "bottleneck_summary", "bottleneck_series"}
    assert all(parsed.metrics.values())
    assert parsed.qdiscs["dualpi2"].classes == ("C", "L")
    assert parsed.tcp_flow["cc"].choices == tuple(parsed.congestion_controls)


@pytest.fixture
def engine_with_a_new_qdisc(monkeypatch):
    """The engine's schema plus a qdisc l4slab has no tc table for."""
    import l4slab.engine
    from l4slab import qdisc

    data = json.loads(l4slab.engine.schema_json())
    param = {"min": None, "max": None, "choices": [], "doc": ""}
    data["qdiscs"].append(
        {
            "kind": "red",
            "doc": "Random Early Detection",
            "classes": [],
            "params": [
                {**param, "name": "limit_packets", "kind": "packets", "default": 1000, "min": 1, "max": 10_000},
                {**param, "name": "target_ns", "kind": "time_ns", "default": 5_000_000},
                {**param, "name": "ecn", "kind": "bool", "default": False},
            ],
        }
    )
    monkeypatch.setattr(l4slab.engine, "schema_json", lambda: json.dumps(data))
    real_check = l4slab.engine.check_qdisc
    # The engine that describes the new kind also validates it: here, it takes any red.
    monkeypatch.setattr(l4slab.engine, "check_qdisc", lambda c: None if c.get("kind") == "red" else real_check(c))
    schema.engine_schema.cache_clear()
    qdisc.REGISTRY.__dict__.pop("_kinds", None)
    yield
    monkeypatch.undo()
    schema.engine_schema.cache_clear()
    qdisc.REGISTRY.__dict__.pop("_kinds", None)


def test_a_qdisc_the_engine_adds_is_spelled_from_its_schema(engine_with_a_new_qdisc):
    from l4slab.qdisc import REGISTRY, describe_engine_qdisc, parse_qdisc, resolve_qdisc

    assert list(REGISTRY)[-1] == "red" and REGISTRY["red"].param_names == ["limit", "target", "ecn/noecn"]
    engine = resolve_qdisc(parse_qdisc("red limit 1bdp target 2ms ecn"), buffer=None, bdp=125_000)
    assert engine == {"kind": "red", "limit_packets": 84, "target_ns": 2_000_000, "ecn": True}
    assert describe_engine_qdisc(engine) == "red limit 84 target 2ms ecn"
    with pytest.raises(ScenarioError, match=r"gives limit 20001 packets, outside the allowed range 1\.\.10000"):
        resolve_qdisc(parse_qdisc("red limit 20001"), buffer=None, bdp=None)


#: A TCP flow entry that sets every knob a scenario has, so that its config carries each one.
EVERY_TCP_KNOB = {
    "cc": "prague",
    "rtt": "10ms",
    "start": "1ms",
    "stop": "900ms",
    "fwd_delay": "4ms",
    "bytes": "10mb",
    "mss": 1400,
    "init_cwnd": 4,
    "rto_min": "100ms",
    "rwnd": "4mb",
    "delayed_ack": False,
    "drop_segments": [3],
    "ecn": "accecn",
    "receiver_ecn": 1,
    "ecn_option": 1,
    "receiver_cc": "dctcp",
    "ecn_low": True,
    "receiver_kernel": "l4steam",
    "receiver_rcvbuf": "5.10",
    "receiver_sack_compression": "kernel",
    "receiver_cc_params": {},
    "fq_pacing": True,
    "tso": False,
    "gro": True,
    "tso_defer": True,
    "tso_defer_ack": "half_srtt",
    "rx_usecs": "20us",
    "sender_rx_usecs": "50us",
    "cc_params": {},
    "direction": "reverse",
}


def test_every_tcp_knob_python_sends_is_one_the_engine_describes():
    from l4slab.scenario import TcpFlow, scenario_from_dict
    from l4slab.scenario.resolve import TCP_ENGINE_FIELDS

    described = set(schema.engine_schema().tcp_flow)
    assert set(TCP_ENGINE_FIELDS) | {"receiver_ecn", "receiver_cc", "receiver_cc_params"} <= described
    # Not TCP knobs: `command` (a command flow's own sender and receiver) is the emulator's,
    # never sent to the engine; `hops` (where a flow enters and leaves a topology) is every
    # flow kind's and checked by the topology (tests/python/test_topology.py).
    assert set(EVERY_TCP_KNOB) == set(TcpFlow.model_fields) - {"kind", "count", "label", "command", "hops"}
    scenario = {"duration": "1s", "bottleneck": {"rate": "10Mbit"}, "flows": [EVERY_TCP_KNOB]}
    (sent,) = scenario_from_dict(scenario).resolve()["flows"]
    assert sent.pop("kind") == "tcp"
    assert set(sent) <= described, sorted(set(sent) - described)
    assert len(sent) == len(EVERY_TCP_KNOB)
    for cc in schema.engine_schema().congestion_controls.values():
        assert set(cc.receiver_defaults) <= described, cc.name


def test_cc_names_and_receiver_defaults_are_the_engines():
    """Which CCs a flow may name and what its receiver gets by default come from the schema only."""
    from l4slab.scenario import TcpFlow, scenario_from_dict

    ccs = schema.engine_schema().congestion_controls
    assert schema.congestion_control_names() == tuple(ccs)
    assert TcpFlow(rtt="10ms").cc == schema.engine_schema().tcp_flow["cc"].default
    for name, cc in ccs.items():
        scenario = {"duration": "1s", "bottleneck": {"rate": "10Mbit"}, "flows": [{"cc": name, "rtt": "10ms"}]}
        (sent,) = scenario_from_dict(scenario).resolve()["flows"]
        receiver = {key: sent[key] for key in ("receiver_ecn", "receiver_cc") if key in sent}
        assert receiver == dict(cc.receiver_defaults), name


def test_the_package_holds_no_list_of_congestion_control_names():
    """A literal set, list or tuple of two or more engine CC names anywhere in the package would
    be a second CC registry (``examples=`` of a field are illustrations, not a registry)."""
    names = set(schema.congestion_control_names())
    illustrations = set()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "examples":
                illustrations.add(id(node.value))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple)) and id(node) not in illustrations:
                strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(strings & names) >= 2:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def test_tcp_knob_ranges_are_the_engines(monkeypatch):
    """Narrowing a knob's range in the engine's schema narrows what a scenario accepts."""
    import dataclasses

    from l4slab.scenario import scenario_from_dict

    flow = {"cc": "reno", "rtt": "10ms", "mss": 1000}
    scenario = {"duration": "1s", "bottleneck": {"rate": "10Mbit"}, "flows": [flow]}
    assert scenario_from_dict(scenario).flows[0].mss == 1000
    real = schema.engine_schema()
    narrowed = dataclasses.replace(real.tcp_flow["mss"], min=1200.0)
    monkeypatch.setattr(
        schema, "engine_schema", lambda: dataclasses.replace(real, tcp_flow={**real.tcp_flow, "mss": narrowed})
    )
    with pytest.raises(
        ScenarioError, match=r"^flows\[0\]\.mss: 1000 is invalid: input should be greater than or equal to 1200"
    ):
        scenario_from_dict(scenario)


def test_every_spelled_qdisc_parameter_is_one_the_engine_describes():
    """The tc tables name engine fields only; every engine parameter ``tc`` has a keyword for
    is spelled; every engine qdisc is in the registry, in the engine's order."""
    from l4slab.qdisc import REGISTRY, SPELLINGS

    engine = schema.engine_schema().qdiscs
    assert list(REGISTRY) == list(engine)
    #: Engine fields set by another parameter's spelling (``step_thresh 5pkt``).
    alternatives = {("dualpi2", "step_thresh_packets")}
    for kind, spelling in SPELLINGS.items():
        assert kind in engine, kind
        spelled = {param.engine_field for param in spelling.params}
        assert spelled <= set(engine[kind].params), kind
        unspelled = {name for name, param in engine[kind].params.items() if param.tc_keyword} - spelled
        assert unspelled == {f for k, f in alternatives if k == kind}, kind
        for param in spelling.params:
            assert param.spec is engine[kind].params[param.engine_field], (kind, param.name)


def test_a_schema_lookup_the_engine_cannot_answer_is_an_engine_error():
    from l4slab.errors import EngineError

    with pytest.raises(EngineError, match="^engine schema: qdisc 'pie' has no parameter 'nope_ns'$"):
        schema.qdisc_spec("pie").param("nope_ns")
    with pytest.raises(EngineError, match="^engine schema: no qdisc 'red'$"):
        schema.qdisc_spec("red")


def test_an_unreadable_engine_schema_is_one_engine_error(monkeypatch):
    import l4slab.engine
    from l4slab.errors import EngineError

    monkeypatch.setattr(l4slab.engine, "schema_json", lambda: '{"version": "x", "qdiscs": []}')
    schema.engine_schema.cache_clear()
    try:
        with pytest.raises(
            EngineError, match=r"^engine schema: not an EngineSchema \(KeyError: 'congestion_controls'\)$"
        ):
            schema.engine_schema()
    finally:
        monkeypatch.undo()
        schema.engine_schema.cache_clear()


def test_metrics_may_be_listed_as_names_or_objects(monkeypatch):
    import l4slab.engine

    data = json.loads(l4slab.engine.schema_json())
    data["metrics"]["flow_summary"] = [{"name": "goodput_mbps", "unit": "Mbit/s"}, "mean_payload_bytes"]
    monkeypatch.setattr(l4slab.engine, "schema_json", lambda: json.dumps(data))
    schema.engine_schema.cache_clear()
    try:
        assert schema.metric_names("flow_summary") == ("goodput_mbps", "mean_payload_bytes")
    finally:
        monkeypatch.undo()
        schema.engine_schema.cache_clear()
