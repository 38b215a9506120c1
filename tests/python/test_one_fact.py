"""One fact, one place: what the engine knows, Python reads through the engine's schema.

How the check works (over the AST of every module of ``python/l4slab``):

* **Bounds and sizes.** The engine publishes its scenario bounds (``schema.limits``: ``max_flows``,
  ``max_timer_latency_ns``, ``max_udp_payload_bytes``, ...). A Python constant (an
  UPPER_CASE name bound to a number written in the source) repeats one when its name is
  the engine constant's name, or when it has the same value and shares a word of the name
  besides MAX/MIN and units (``MAX_UDP_PAYLOAD = 65_507`` against
  ``max_udp_payload_bytes``). The same for the sizes of what a run holds in memory
  (``schema.memory``: ``flow_series``, ``flow_state_bytes``, ...).
* **Vocabularies.** The engine's names (congestion controls, qdisc kinds, ECN modes, every
  parameter's choices): a Python literal collection of strings (tuple, list, set, the keys
  or values of a dict, or the string arguments of one call) holding every name of one of
  them, three or more, repeats it.
* **Rules.** The engine validates a qdisc's parameters across fields (DualPI2's
  variant-only ones, alpha/beta as tc truncates them); Python's resolution calls it
  (``engine.check_qdisc``) and has no rule of its own, so the engine's messages come back
  in tc's words.

* **TCP knobs.** Every knob of a TCP flow is declared once, in the engine's table
  (``config.rs`` ``tcp_flow_params``: name, kind, default, bounds, doc); the scenario model
  generates its fields from it. A Python class that declares a field named as an engine TCP
  knob (its engine name or its scenario name, ``rto_min`` for ``rto_min_ns``) in a model a TCP
  flow is built from (``TcpFlow``, ``WebSource`` and their bases), or a literal dict that maps
  a knob's name to the engine's default for it, declares the knob again. The path's knobs
  (``rtt``, ``start``, ``stop``, ``fwd_delay``), which every flow and source shares, are
  declared once for all kinds in ``scenario/model.py`` ``_FlowCommon``.

* **Defaults.** Where a config leaves a field unset, the engine fills it (a TCP knob's
  default in ``tcp_flow``; the capture's packet budget and a UDP-Prague flow's packet size,
  published as ``limits``' ``*_default``). Python code that needs that value reads the
  schema: a fallback written as ``x.get("field", VALUE)``, ``x.get("field") or VALUE``, a
  model field's ``Field(VALUE)`` or a ``DEFAULT_FIELD`` constant holding the engine's
  default repeats it.

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


def _bad_package(tmp_path, monkeypatch, source: str) -> None:
    """Point the checks at a package of one module, ``bad.py`` holding ``source`` (each
    check's can-fail test)."""
    import test_one_fact as me

    copy = tmp_path / "l4slab"
    copy.mkdir()
    (copy / "bad.py").write_text(source, encoding="utf-8")
    monkeypatch.setattr(me, "PACKAGE", copy)


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


def _tcp_knob_names() -> dict[str, str]:
    """Every name of an engine TCP knob (engine name and scenario name) → its engine name."""
    from l4slab import schema
    from l4slab.scenario.resolve import tcp_knob_field

    names = {}
    for key, spec in schema.engine_schema().tcp_flow.items():
        names[key] = key
        names[tcp_knob_field(spec)] = key
    return names


def redeclared_tcp_knobs(models) -> list[str]:
    """Fields named as an engine TCP knob that a class of ``models`` (or a base of it) declares
    by hand: only the generated knob model (``_TcpKnobs``) may hold them, and ``_FlowCommon``
    the path's."""
    from l4slab.scenario.model import _FlowCommon, _TcpKnobs
    from l4slab.scenario.resolve import PATH_KNOBS

    names = _tcp_knob_names()
    found = set()
    for model in models:
        for cls in model.__mro__:
            if cls is _TcpKnobs:
                continue
            for field in vars(cls).get("__annotations__", {}):
                if field in names and not (cls is _FlowCommon and names[field] in PATH_KNOBS):
                    found.add(f"{cls.__module__}.{cls.__qualname__}.{field} declares the engine's TCP knob "
                              f"{names[field]} again")  # fmt: skip
    return sorted(found)


def repeated_tcp_defaults(defaults: dict[str, object]) -> list[str]:
    """Literal dicts that map a TCP knob's name (beyond the path's: ``start`` names many
    things) to the engine's default for it (``defaults``: engine name → default)."""
    from l4slab.scenario.resolve import PATH_KNOBS

    names = {name: key for name, key in _tcp_knob_names().items() if key not in PATH_KNOBS}
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values):
                if not (isinstance(key, ast.Constant) and key.value in names):
                    continue
                try:
                    literal = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
                default = defaults[names[key.value]]
                if default not in (None, []) and literal == default and type(literal) is type(default):
                    found.append(f"{path.relative_to(PACKAGE)}:{key.lineno}: {key.value!r}: {literal!r} repeats "
                                 f"the engine's default of {names[key.value]}")  # fmt: skip
    return found


def _tcp_defaults() -> dict[str, object]:
    from l4slab import schema

    return {key: spec.default for key, spec in schema.engine_schema().tcp_flow.items()}


def _tcp_models():
    from l4slab.scenario import TcpFlow

    models, todo = [], [TcpFlow]
    while todo:
        model = todo.pop()
        models.append(model)
        todo += model.__subclasses__()
    return models


def test_python_declares_no_engine_tcp_knob_again():
    from l4slab import schema
    from l4slab.scenario import TcpFlow
    from l4slab.scenario.model import WebSource
    from l4slab.scenario.resolve import PATH_KNOBS, tcp_knob_field

    assert WebSource in _tcp_models()
    assert redeclared_tcp_knobs(_tcp_models()) == []
    assert repeated_tcp_defaults(_tcp_defaults()) == []
    # and the model has every knob the engine declares, under its scenario name, with its doc
    for key, spec in schema.engine_schema().tcp_flow.items():
        name = "direction" if key == "reverse" else tcp_knob_field(spec)
        assert name in TcpFlow.model_fields, key
        if key not in PATH_KNOBS:
            assert TcpFlow.model_fields[name].description == spec.doc, key


def test_the_tcp_knob_checks_find_a_knob_declared_again(tmp_path, monkeypatch):
    """The checks can fail: a model field or a dict of defaults naming an engine TCP knob is caught."""
    from l4slab.scenario import TcpFlow
    from l4slab.scenario.model import _FlowCommon

    class Handmade(TcpFlow):
        rto_min: int | None = None

    class Common(_FlowCommon):
        mss: int | None = None

    found = redeclared_tcp_knobs([Handmade, Common])
    assert len(found) == 2 and "Handmade.rto_min declares the engine's TCP knob rto_min_ns" in found[1], found
    assert "Common.mss" in found[0], found
    _bad_package(tmp_path, monkeypatch, "KERNEL = {'init_cwnd': 10, 'delayed_ack': True, 'mss': 9000, 'start': 0}\n")
    found = repeated_tcp_defaults(_tcp_defaults())
    assert len(found) == 2 and "default of init_cwnd" in found[0] and "default of delayed_ack" in found[1], found


def test_python_repeats_no_engine_bound():
    from l4slab import schema

    limits = schema.engine_schema().limits
    assert {"max_flows", "max_timer_latency_ns", "max_udp_payload_bytes"} <= set(limits)
    assert repeated_bounds(limits) == []


#: The ``limits`` entries that are a default, not a bound, and the config field each fills
#: (a new one is added here, or the test below says which is missing).
DEFAULT_FIELDS = {
    "capture_max_packets_default": "max_packets",
    "udp_prague_max_packet_bytes_default": "max_packet_bytes",
}


def engine_defaults() -> dict[str, object]:
    """The engine's defaults by the field they fill (engine and scenario names): every TCP
    knob's beyond the path's, and the sizes a scenario may leave unset (``limits``'
    ``*_default``). Falsy defaults (0, false) are left out: ``.get(key, 0)`` says nothing."""
    from l4slab import schema
    from l4slab.scenario.resolve import PATH_KNOBS, tcp_knob_field

    spec = schema.engine_schema()
    defaults: dict[str, object] = {}
    for key, param in spec.tcp_flow.items():
        if key not in PATH_KNOBS and param.default:
            defaults[key] = defaults[tcp_knob_field(param)] = param.default
    for name, value in spec.limits.items():
        if name.endswith("_default"):
            assert name in DEFAULT_FIELDS, f"limits[{name!r}]: which config field does it fill? (DEFAULT_FIELDS)"
            defaults[DEFAULT_FIELDS[name]] = value
    return defaults


def _written_default(node: ast.AST):
    """(field, the node of the value written for it) where Python supplies a value for a
    field left unset: ``x.get("field", VALUE)``, ``x.get("field") or VALUE``,
    ``x["field"] or VALUE``, a model field ``field: T = Field(VALUE, ...)`` or ``= VALUE``,
    a constant ``DEFAULT_FIELD = VALUE`` / ``FIELD_DEFAULT = VALUE``; else None."""

    def key_of(expr):
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get":
            if expr.args and isinstance(expr.args[0], ast.Constant):
                return expr.args[0].value
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return expr.slice.value
        return None

    if isinstance(node, ast.Call) and key_of(node) is not None and len(node.args) == 2:
        return key_of(node), node.args[1]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        if key_of(node.values[0]) is not None:
            return key_of(node.values[0]), node.values[1]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        value = node.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Field" and value.args:
            value = value.args[0]
        return node.target.id, value
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        name = node.targets[0].id
        for affix in ("DEFAULT_", "_DEFAULT"):
            if name.isupper() and affix in (name[: len(affix)], name[-len(affix) :]):
                return name.replace(affix, "").lower(), node.value
    return None


def repeated_defaults(defaults: dict[str, object]) -> list[str]:
    """Places that write an engine default again where a field is left unset."""
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            written = _written_default(node)
            if written is None or written[0] not in defaults:
                continue
            field, value = written
            literal = _number(value)
            if literal is None:
                try:
                    literal = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
            default = defaults[field]
            if literal == default and type(literal) is type(default):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {field} = {literal!r} repeats the "
                             f"engine's default")  # fmt: skip
    return found


def test_python_writes_no_engine_default_again():
    """Where a config leaves a field to the engine (a TCP knob, the capture's packet budget,
    a UDP-Prague flow's packet size), Python reads the engine's default from the schema
    (``tcp_flow``, ``limits``' ``*_default``) and writes none of its own."""
    defaults = engine_defaults()
    assert defaults["mss"] == 1448 and defaults["max_packets"] == 1_000_000
    assert repeated_defaults(defaults) == []


def test_the_default_check_finds_a_default_written_again(tmp_path, monkeypatch):
    _bad_package(
        tmp_path,
        monkeypatch,
        "DEFAULT_MSS = 1448\n"
        "def f(c, capture):\n"
        "    return c.get('mss') or 1448, capture.get('max_packets', 1_000_000), c['init_cwnd'] or 10,"
        " c.get('mss', 9000)\n"
        "class Capture:\n"
        "    max_packets: int = Field(1_000_000, description='x')\n",
    )
    found = repeated_defaults(engine_defaults())
    assert sorted(int(f.split(":")[1]) for f in found) == [1, 3, 3, 3, 5], found


def _memory_sizes() -> dict[str, float]:
    from l4slab import schema

    return {k: v for k, v in schema.engine_schema().memory.items() if isinstance(v, (int, float))}


def test_python_repeats_no_engine_memory_size(tmp_path, monkeypatch):
    """The engine publishes what its runs hold in memory (schema ``memory``: series per flow,
    record sizes, a flow's state); :mod:`l4slab.memory` reads them and repeats none. A copy
    is caught."""
    sizes = _memory_sizes()
    assert {"flow_series", "bottleneck_series", "flow_state_bytes", "sojourn_record_bytes"} <= set(sizes)
    assert repeated_bounds(sizes) == []
    _bad_package(tmp_path, monkeypatch, "FLOW_SERIES = 12\nBOTTLENECK_SERIES = 7\n")
    assert len(repeated_bounds(sizes)) == 2


def test_python_repeats_no_engine_vocabulary():
    vocab = engine_vocabularies()
    assert vocab["ECN modes"] == ("off", "rfc3168", "accecn")
    assert repeated_vocabularies(vocab) == []


def test_the_checks_find_a_repeated_fact(tmp_path, monkeypatch):
    """The checks can fail: a module that copies a bound or a vocabulary is caught."""
    from l4slab import schema

    _bad_package(
        tmp_path,
        monkeypatch,
        "MAX_FLOWS = 16_384\nMAX_UDP_PAYLOAD = 65_507\nROW_GROUP_ROWS = 16384\n"
        "ECN_MODES = {0: 'off', 1: 'rfc3168', 2: 'accecn', 3: 'pending'}\n"
        "CCS = ('reno', 'cubic')\n",
    )
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


def test_python_repeats_no_receiver_kernel_buffer():
    """The receivers' tcp_rmem maxima (schema ``receiver_rcvbufs``: mainline's 32 MiB, 6 MiB
    before 6.16) live in the engine (tcp/rcvbuf.rs); the kernel backend sets its guest's
    sysctl from them. No module of the package writes one again as a number."""
    import re

    from l4slab import schema

    kernels = schema.engine_schema().receiver_rcvbufs
    assert set(kernels) == {"mainline", "6.6", "5.15", "5.10"}
    maxima = {int(entry["tcp_rmem"][2]) for entry in kernels.values()}
    assert maxima == {32 << 20, 6 << 20}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number in re.findall(r"(?<![\w.])\d[\d_]{5,}(?![\w.])", path.read_text(encoding="utf-8")):
            if int(number.replace("_", "")) in maxima:
                found.append(f"{path.relative_to(PACKAGE)}: {number}")
    assert found == [], found
