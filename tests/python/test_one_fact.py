"""One fact, one place: what the engine knows, Python reads through the engine's schema.

How the check works (over the AST of every module of ``python/l4slab``):

* **Bounds.** The engine publishes its scenario bounds (``schema.limits``: ``max_flows``,
  ``max_timer_latency_ns``, ``max_udp_payload_bytes``, ...). A Python constant (an
  UPPER_CASE name bound to a number written in the source) repeats one when its name is
  the engine constant's name, or when it has the same value and shares a word of the name
  besides MAX/MIN and units (``MAX_UDP_PAYLOAD = 65_507`` against
  ``max_udp_payload_bytes``).
* **Vocabularies.** The engine's names (congestion controls, qdisc kinds, ECN modes, every
  parameter's choices): a Python literal collection of strings (tuple, list, set, the keys
  or values of a dict, or the string arguments of one call) holding every name of one of
  them, three or more, repeats it.
* **Rules.** The engine validates a qdisc's parameters across fields (DualPI2's
  variant-only ones, alpha/beta as tc truncates them); Python's resolution calls it
  (``engine.check_qdisc``) and has no rule of its own, so the engine's messages come back
  in tc's words.

A fact Python must hold for another reason (a kernel's or a paper's, not the engine's) is
named apart: e.g. the kernel testbed's ``MAX_GUEST_FLOWS``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import requires_engine

pytestmark = [requires_engine]

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "l4slab"
#: Words that do not make two names the same fact.
GENERIC = {"MAX", "MIN", "NS", "BYTES", "BPS", "PER", "S", "US", "MS", "PACKETS"}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _number(node: ast.AST):
    """The value of a number written in the source (a literal or arithmetic of literals)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Sub, ast.Add, ast.Mult, ast.LShift)):
            left, right = _number(node.left), _number(node.right)
            if left is not None and right is not None:
                try:
                    return eval(compile(ast.Expression(node), "<const>", "eval"), {"__builtins__": {}})  # noqa: S307
                except Exception:  # noqa: BLE001
                    return None
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _constants():
    """(path, line, NAME, value) of every UPPER_CASE name bound to a written number."""
    for path, tree in _modules():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []  # fmt: skip
            for target in targets:
                if isinstance(target, ast.Name) and re.fullmatch(r"[A-Z][A-Z0-9_]*", target.id):
                    value = _number(node.value)
                    if value is not None:
                        yield path, node.lineno, target.id, value


def _string_collections():
    """(path, line, set of strings) of every literal collection of strings."""
    for path, tree in _modules():
        for node in ast.walk(tree):
            groups = []
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                groups.append(node.elts)
            elif isinstance(node, ast.Dict):
                groups += [[k for k in node.keys if k is not None], node.values]
            elif isinstance(node, ast.Call):
                groups.append(node.args)
            for elts in groups:
                strings = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(strings) >= 3:
                    yield path, node.lineno, strings


def repeated_bounds(limits) -> list[str]:
    found = []
    for path, line, name, value in _constants():
        for key, limit in limits.items():
            words = set(name.split("_")) - GENERIC
            same_name = name == key.upper()
            same_fact = value == limit and words & (set(key.upper().split("_")) - GENERIC)
            if same_name or same_fact:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {name} = {value} repeats the engine's {key}")
    return found


def repeated_vocabularies(vocabularies) -> list[str]:
    found = []
    for path, line, strings in _string_collections():
        for what, names in vocabularies.items():
            if len(names) >= 3 and set(names) <= strings:
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {sorted(names)} repeats the engine's {what}")
    return found


def engine_vocabularies() -> dict[str, tuple[str, ...]]:
    from l4slab import schema

    spec = schema.engine_schema()
    vocab = {
        "congestion controls": tuple(spec.congestion_controls),
        "qdisc kinds": tuple(spec.qdiscs),
        "ECN modes": spec.ecn_modes,
    }
    for kind, qdisc in spec.qdiscs.items():
        for param in qdisc.params.values():
            if param.choices:
                vocab[f"{kind}.{param.name} choices"] = param.choices
    for param in spec.tcp_flow.values():
        if param.choices and set(param.choices) != set(spec.congestion_controls):
            vocab[f"flow {param.name} choices"] = param.choices
    return vocab


def test_python_repeats_no_engine_bound():
    from l4slab import schema

    limits = schema.engine_schema().limits
    assert {"max_flows", "max_timer_latency_ns", "max_udp_payload_bytes"} <= set(limits)
    assert repeated_bounds(limits) == []


def test_python_repeats_no_engine_vocabulary():
    vocab = engine_vocabularies()
    assert vocab["ECN modes"] == ("off", "rfc3168", "accecn")
    assert repeated_vocabularies(vocab) == []


def test_the_checks_find_a_repeated_fact(tmp_path, monkeypatch):
    """The checks can fail: a module that copies a bound or a vocabulary is caught."""
    import test_one_fact as me
    from l4slab import schema

    copy = tmp_path / "l4slab"
    copy.mkdir()
    (copy / "bad.py").write_text(
        "MAX_FLOWS = 16_384\nMAX_UDP_PAYLOAD = 65_507\nROW_GROUP_ROWS = 16384\n"
        "ECN_MODES = {0: 'off', 1: 'rfc3168', 2: 'accecn', 3: 'pending'}\n"
        "CCS = ('reno', 'cubic')\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(me, "PACKAGE", copy)
    bounds = repeated_bounds(schema.engine_schema().limits)
    assert [b.split(":")[1] for b in bounds] == ["1", "2"], bounds
    vocab = repeated_vocabularies(engine_vocabularies())
    assert len(vocab) == 1 and "ECN modes" in vocab[0], vocab


@pytest.mark.parametrize(
    ("tc", "message"),
    [
        ("dualpi2 alpha 0.001", "bottleneck.qdisc.alpha: 0.001 is out of range (allowed 1/256..<8388608 Hz"),
        ("dualpi2 beta 1e7", "bottleneck.qdisc.beta: 10000000.0 is out of range (allowed 0..=8388607.99609375)"),
        ("dualpi2 variant l4steam memlimit 1mb", "bottleneck.qdisc.memlimit: 1048576 is not supported by variant l4steam"),
        ("dualpi2 variant l4steam min_qlen_step 1", "bottleneck.qdisc.min_qlen_step: 1 is not supported by variant"),
        ("dualpi2 variant l4steam cla_ect", "bottleneck.qdisc.ecn_mask: cla_ect is not supported by variant l4steam"),
    ],
)
def test_dualpi2_rules_come_from_the_engine_in_tc_words(tc, message):
    from l4slab.errors import ScenarioError
    from l4slab.scenario import scenario_from_dict

    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(
            {"duration": "1s", "bottleneck": {"rate": "10Mbit", "qdisc": tc}, "flows": [{"cc": "cubic", "rtt": "10ms"}]}
        ).resolve()
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


def test_alpha_zero_is_l4steam_only():
    from l4slab.errors import ScenarioError
    from l4slab.scenario import scenario_from_dict

    def resolve(tc):
        return scenario_from_dict(
            {"duration": "1s", "bottleneck": {"rate": "10Mbit", "qdisc": tc}, "flows": [{"cc": "cubic", "rtt": "10ms"}]}
        ).resolve()["bottleneck"]["qdisc"]

    assert resolve("dualpi2 alpha 0 variant l4steam")["alpha"] == 0.0
    with pytest.raises(ScenarioError, match="alpha: 0 is out of range"):
        resolve("dualpi2 alpha 0")
