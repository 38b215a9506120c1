"""Study files: parsing, validation and expansion into runs.

A study file is TOML::

    [study]
    name = "pam-queues"
    seed = 1                 # study seed: every trial's seed is derived from it
    trials = 10              # runs per point
    metrics = ["goodput_mbps", "queuing_delay_ms"]   # optional: metrics to summarise (default: all)
    report = "pam2025-prague-cubic"  # optional: add that built-in study's report sections
    reproduces = "PAM 2025 (Sarpkaya et al.) Tables 2-3"  # optional: the paper and figure (study show)

    [base]                   # a scenario (the scenario file schema); or: base = "scenario.toml"
    duration = "60s"
    ...

    [factors]                # each a list of values, applied by dotted path; cartesian product
    "bottleneck.qdisc" = "@pam2025.queues"           # a preset of a built-in study (registry)
    "bottleneck.buffer" = ["0.5bdp", "1bdp", "2bdp"]
    "flows.1.ecn" = [0, 1]

    [zip]                    # groups of factors varied together (one dimension each)
    pair = {"flows.0.cc" = ["prague", "dctcp"], "flows.1.cc" = ["cubic", "reno"]}

    exclude = [{"bottleneck.qdisc" = "dualpi2", "flows.1.ecn" = 1}]   # drop matching points
    filter = [{"bottleneck.buffer" = ["1bdp", "2bdp"]}]              # keep only matching points

    [panels.prague-bbr1]     # optional named sub-studies (docs/studies.md "Panels"):
    set = {"flows.1.cc" = "bbr"}                     # base overrides of this panel
    factors = {"bottleneck.buffer" = ["2bdp"]}       # merged over [factors]; zip/exclude/filter replace

(``exclude``/``filter`` go before the first table header or inside ``[study]``.) With
panels, the points are the union of every panel's product, with a leading ``panel``
factor; ``load_study(..., panels=[...])`` (``study run --panel``) keeps only some. A rule
matches a point when every factor it names has the given value (or one of the given
values, for a list).

:func:`load_study` validates everything before anything runs: every point's scenario
is resolved into its engine config up front, so an unknown factor path, a bad unit in
any value or an empty product is one :class:`~l4slab.errors.ScenarioError` line.

Seeds: trial ``t`` of point ``key`` gets
``int.from_bytes(sha256(f"l4slab.study/1\\n{study_seed}\\n{key}\\n{t}")[:8]) >> 1`` (63 bits),
where ``key`` is the point's canonical JSON: stable across machines and Python versions.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import schema, units
from ..errors import ScenarioError
from ..limits import check_values, show
from ..scenario import apply_overrides, read_toml_file, scenario_from_dict
from . import registry

__all__ = ["StudySpec", "Point", "RunSpec", "load_study", "study_from_dict", "trial_seed", "run_id"]

SEED_DOMAIN = "l4slab.study/1"
#: Bounds of a study: trials per point, values per factor, the product
#: before exclude/filter, points (each resolved up front) and runs (files) after them.
MAX_TRIALS = 10_000
MAX_FACTOR_VALUES = 1_000
MAX_PRODUCT = 1_000_000
MAX_POINTS = 20_000
MAX_RUNS = 200_000
TOP_KEYS = ("study", "base", "factors", "zip", "exclude", "filter", "panels")
#: Keys of a ``[panels.NAME]`` table.
PANEL_KEYS = ("doc", "set", "factors", "zip", "exclude", "filter")
#: The catalog column (and pseudo-factor path) naming a point's panel.
PANEL_FACTOR = "panel"
STUDY_KEYS = ("name", "description", "reproduces", "seed", "trials", "metrics", "report", "exclude", "filter")

# --- presets ---------------------------------------------------------------------------------

#: The factor presets apply to (their values are qdisc labels).
PRESET_PATH = "bottleneck.qdisc"


@dataclass(frozen=True)
class Preset:
    """A preset factor: its values are labels, turned into tc strings per point."""

    name: str
    labels: tuple[str, ...]
    target: str = "5ms"
    #: the router's uptime for the CoDel-clocked queues (``codel``, ``fq_codel``), or None
    uptime: str | None = None

    def qdisc(self, label: str, buffer_bytes: int) -> str:
        """The tc string of ``label`` for a buffer of ``buffer_bytes`` (PAM: int(n·BDP)),
        with ``uptime`` appended when the preset sets it and the queue reads CoDel's clock."""
        packets = buffer_bytes // 1500 + 1
        text = registry.presets()[self.name][label].format(B=buffer_bytes, P=packets, T=self.target)
        if self.uptime is not None and reads_router_clock(text.split()[0]):
            text += f" uptime {self.uptime}"
        return text


def reads_router_clock(kind: str) -> bool:
    """Whether qdisc ``kind``'s state reads the router's clock (include/net/codel.h:
    codel_get_time): the engine's schema gives it an ``uptime`` parameter (codel, fq_codel),
    which sets that clock; the kernel backend lets the guest's clock run to it."""
    from ..qdisc import REGISTRY

    spec = REGISTRY.get(kind)
    return spec is not None and any(param.name == "uptime" for param in spec.params)


def _parse_preset(where: str, value: Any) -> Preset | None:
    """``"@pam2025.queues"`` or ``{preset = "pam2025.queues", target = "1ms", only = [...],
    uptime = "1000s"}``."""
    if isinstance(value, str) and value.startswith("@"):
        spec: dict[str, Any] = {"preset": value[1:]}
    elif isinstance(value, Mapping) and "preset" in value:
        spec = dict(value)
    else:
        return None
    name = str(spec.pop("preset")).lstrip("@")
    known = registry.presets()
    if name not in known:
        raise ScenarioError(f"{where}: unknown preset '@{name}'; known: {', '.join('@' + p for p in known)}")
    table = known[name]
    only = spec.pop("only", list(table))
    target = spec.pop("target", "5ms")
    uptime = spec.pop("uptime", None)
    if spec:
        raise ScenarioError(f"{where}: unknown preset option {sorted(spec)[0]!r}; allowed: preset, only, target, uptime")
    if isinstance(only, str) or not isinstance(only, list) or not only:
        raise ScenarioError(f"{where}.only: {only!r} is not a non-empty list of labels; known: {', '.join(table)}")
    for label in only:
        if label not in table:
            raise ScenarioError(f"{where}.only: {label!r} is not a queue of @{name}; known: {', '.join(table)}")
    try:
        target_ns = units.time_ns(target)
    except units.UnitError as err:
        raise ScenarioError(f"{where}.target: {err}") from None
    uptime_text = None
    if uptime is not None:
        try:
            uptime_text = units.format_time(units.time_ns(uptime))
        except units.UnitError as err:
            raise ScenarioError(f"{where}.uptime: {err}") from None
    return Preset(name, tuple(only), units.format_time(target_ns), uptime_text)


# --- model -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """One varied setting: its dotted path, its catalog column and its values."""

    path: str
    values: tuple[Any, ...]
    preset: Preset | None = None

    @property
    def column(self) -> str:
        return column_name(self.path)


@dataclass
class Point:
    """One point of the product: factor values (path → value), its scenario and config."""

    index: int
    values: dict[str, Any]
    key: str
    scenario: dict[str, Any]
    config: dict[str, Any]


@dataclass(frozen=True)
class RunSpec:
    """One run: a point, a trial and its seed; ``id`` is :func:`run_id` of its config, the model and the backend."""

    id: str
    point: int
    trial: int
    seed: int


@dataclass
class StudySpec:
    """A validated, fully expanded study."""

    name: str
    seed: int
    trials: int
    metrics: list[str] | None
    #: The built-in study whose report sections the report adds (None: generic report only).
    report: str | None
    factors: list[Factor]
    points: list[Point]
    runs: list[RunSpec] = field(default_factory=list)
    source_text: str = ""
    #: The engine's model (:func:`l4slab.schema.model_id`) the run ids hash.
    model: str = ""
    #: The backend the run ids are for (``sim``, ``emulate``, ``kernel``) and, for
    #: ``kernel``, the digest of the guest's files.
    backend: str = "sim"
    guest: str = ""

    def config(self, run: RunSpec) -> dict[str, Any]:
        """The engine config of ``run`` (the point's config with the trial's seed)."""
        return {**self.points[run.point].config, "seed": run.seed}


def column_name(path: str) -> str:
    """Catalog column of a factor path: ``"flows.1.ecn"`` / ``"flows[1].ecn"`` → ``flows_1_ecn``."""
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z_]", "_", path)).strip("_") or "factor"


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def trial_seed(study_seed: int, point_key: str, trial: int) -> int:
    """Deterministic 63-bit seed of a trial (sha256; no Python ``hash()``)."""
    digest = hashlib.sha256(f"{SEED_DOMAIN}\n{study_seed}\n{point_key}\n{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


RUN_ID_DOMAIN = "l4slab.run/2"


def config_digest(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a resolved engine config (seed included)."""
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()


def run_id(config: Mapping[str, Any], model: str, backend: str = "sim", guest: str = "") -> str:
    """A run's id: sha256 of its resolved engine config (:func:`config_digest`, seed
    included), the engine's model (:func:`l4slab.schema.model_id`: version and corpus
    digest) and the backend that runs it (``guest``: for ``kernel``, the digest of the
    guest's own files). Every reader of a plan or a run file recomputes it."""
    return id_from_digest(config_digest(config), model, backend, guest)


def id_from_digest(config_sha256: str, model: str, backend: str = "sim", guest: str = "") -> str:
    """:func:`run_id` from the config's digest (what a run file's identity records)."""
    text = f"{RUN_ID_DOMAIN}\nconfig={config_sha256}\nmodel={model}\nbackend={backend}\nguest={guest}"
    return hashlib.sha256(text.encode()).hexdigest()


# --- parsing ---------------------------------------------------------------------------------


def _values(where: str, value: Any, unique: bool = True) -> tuple[tuple[Any, ...], Preset | None]:
    preset = _parse_preset(where, value)
    if preset is not None:
        return preset.labels, preset
    if not isinstance(value, list) or not value:
        raise ScenarioError(f'{where}: {show(value)} is not a non-empty list of values; expected e.g. ["1bdp", "2bdp"]')
    if len(value) > MAX_FACTOR_VALUES:
        raise ScenarioError(f"{where}: {len(value)} values; at most {MAX_FACTOR_VALUES} per factor")
    keys = [canonical_json(v) for v in value]
    if unique and len(set(keys)) != len(keys):
        raise ScenarioError(f"{where}: repeated value in {value!r}")
    return tuple(value), None


def _rules(where: str, rules: Any, known: set[str]) -> list[dict[str, list[Any]]]:
    if rules is None:
        return []
    if isinstance(rules, Mapping):
        rules = [rules]
    if not isinstance(rules, list):
        raise ScenarioError(f'{where}: {rules!r} is not a list of tables; expected e.g. [{{"flows.1.ecn" = 1}}]')
    parsed = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or not rule:
            raise ScenarioError(f"{where}[{i}]: {rule!r} is not a table of factor = value")
        for name in rule:
            if name not in known:
                raise ScenarioError(f"{where}[{i}]: {name!r} is not a factor; factors: {', '.join(sorted(known))}")
        parsed.append({name: (list(v) if isinstance(v, list) else [v]) for name, v in rule.items()})
    return parsed


def _matches(point: Mapping[str, Any], rule: Mapping[str, list[Any]]) -> bool:
    return all(canonical_json(point[name]) in {canonical_json(v) for v in allowed} for name, allowed in rule.items())


def _check_keys(where: str, table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise ScenarioError(f"{where}{key}: unknown key; allowed: {', '.join(allowed)}")


def _base_scenario(data: Mapping[str, Any], root: Path) -> dict[str, Any]:
    base = data.get("base")
    if base is None:
        raise ScenarioError('base: missing; add a [base] scenario table or base = "scenario.toml"')
    if isinstance(base, str):
        path = (root / base) if not os.path.isabs(base) else Path(base)
        try:
            scenario, _ = read_toml_file(path, "scenario")
        except ScenarioError as err:
            raise ScenarioError(f"base: {err}") from None
        scenario.setdefault("name", path.stem)
        return scenario
    if not isinstance(base, Mapping):
        raise ScenarioError(f"base: {base!r} is not a scenario table or a path")
    return copy.deepcopy(dict(base))


def _apply_point(base: dict[str, Any], values: Mapping[str, Any], factors: list[Factor]) -> dict[str, Any]:
    plain = {f.path: values[f.path] for f in factors if f.preset is None}
    data = apply_overrides(base, plain)
    for factor in factors:
        if factor.preset is None:
            continue
        bottleneck = data.get("bottleneck")
        if not isinstance(bottleneck, dict):
            raise ScenarioError(f"factors.{factor.path}: the base scenario has no [bottleneck] table")
        buffer = bottleneck.pop("buffer", None)
        if buffer is None:
            raise ScenarioError(
                f"factors.{factor.path}: @{factor.preset.name} needs a buffer; add a factor "
                '"bottleneck.buffer" = ["1bdp", ...] or bottleneck.buffer to the base'
            )
        try:
            amount = units.buffer(buffer)
        except units.UnitError as err:
            raise ScenarioError(f"bottleneck.buffer: {err}") from None
        if isinstance(amount, units.BdpMultiple):
            probe = apply_overrides(data, {"bottleneck.qdisc": "pfifo"})
            bdp, reason = scenario_from_dict(probe).bdp_bytes()
            if bdp is None:
                raise ScenarioError(f"bottleneck.buffer: {str(amount)!r} needs the BDP, but {reason}")
            amount = int(amount.factor * Fraction(bdp))
        bottleneck["qdisc"] = factor.preset.qdisc(values[factor.path], int(amount))
    return data


def _product(
    where: str, raw_factors: Any, raw_zip: Any, raw_exclude: Any, raw_filter: Any
) -> tuple[list[Factor], list[dict[str, Any]]]:
    """The factors of one product (``[factors]`` and ``[zip]``) and its points after
    ``exclude`` / ``filter``: (factors, [path → value])."""
    factors: list[Factor] = []
    dimensions: list[list[dict[str, Any]]] = []
    if not isinstance(raw_factors, Mapping):
        raise ScenarioError(f'{where}factors: not a table; expected [factors] with "path" = [values]')
    for path, value in raw_factors.items():
        values, preset = _values(f"{where}factors.{path}", value)
        if preset is not None and path != PRESET_PATH:
            raise ScenarioError(f"{where}factors.{path}: presets apply to {PRESET_PATH!r} only")
        factors.append(Factor(path, values, preset))
        dimensions.append([{path: v} for v in values])
    if not isinstance(raw_zip, Mapping):
        raise ScenarioError(f'{where}zip: not a table; expected [zip] group = {{"path" = [...], "path2" = [...]}}')
    for group, members in raw_zip.items():
        if not isinstance(members, Mapping) or len(members) < 1:
            raise ScenarioError(f"{where}zip.{group}: not a table of factor = [values]")
        columns = []
        for path, value in members.items():
            if _parse_preset(f"{where}zip.{group}.{path}", value) is not None:
                raise ScenarioError(f"{where}zip.{group}.{path}: presets cannot be zipped; put it in [factors]")
            # A zipped list may repeat a value (1v2, 1v5, ...); the rows must differ.
            values, _ = _values(f"{where}zip.{group}.{path}", value, unique=False)
            distinct = tuple({canonical_json(v): v for v in values}.values())
            factors.append(Factor(path, distinct))
            columns.append((path, values))
        lengths = {len(values) for _, values in columns}
        if len(lengths) > 1:
            shown = ", ".join(f"{path}: {len(values)}" for path, values in columns)
            raise ScenarioError(
                f"{where}zip.{group}: lists of different lengths ({shown}); zipped factors need equal lengths"
            )
        rows = [canonical_json([values[i] for _, values in columns]) for i in range(len(columns[0][1]))]
        if len(set(rows)) != len(rows):
            raise ScenarioError(f"{where}zip.{group}: a repeated row of values; each zipped row must differ")
        dimensions.append([{path: values[i] for path, values in columns} for i in range(lengths.pop())])
    paths = [f.path for f in factors]
    duplicates = sorted({p for p in paths if paths.count(p) > 1})
    if duplicates:
        raise ScenarioError(
            f"{where}factors: {duplicates[0]!r} is varied twice (in [factors] and [zip], or two zip groups)"
        )
    columns = [f.column for f in factors]
    if len(set(columns)) != len(columns):
        raise ScenarioError(f"{where}factors: two factor paths map to the same catalog column ({columns})")
    size = 1
    for dimension in dimensions:
        size *= len(dimension)
    if size > MAX_PRODUCT:
        raise ScenarioError(f"{where}factors: {size} combinations before exclude/filter; at most {MAX_PRODUCT}")
    known = set(paths)
    excludes = _rules(f"{where}exclude", raw_exclude, known)
    filters = _rules(f"{where}filter", raw_filter, known)
    combos = []
    for parts in itertools.product(*dimensions):
        values: dict[str, Any] = {}
        for part in parts:
            values.update(part)
        ordered = {path: values[path] for path in paths}
        if any(_matches(ordered, rule) for rule in excludes):
            continue
        if filters and not any(_matches(ordered, rule) for rule in filters):
            continue
        combos.append(ordered)
    if not combos:
        raise ScenarioError(f"{where or 'study: '}no points left: the factors' product is empty after exclude/filter")
    return factors, combos


Unit = tuple[str | None, dict[str, Any], list[Factor], list[dict[str, Any]]]


def _panel_units(
    data: Mapping[str, Any], meta: Mapping[str, Any], base: dict[str, Any], selected: Sequence[str] | None
) -> list[Unit]:
    """The study's products: one (None, base, ...) without ``[panels]``; else one per
    selected panel, its base being the study's with the panel's ``set`` applied, its
    factors the study's with the panel's ``factors`` merged over them (a panel's
    ``zip``, ``exclude``, ``filter`` replace the study's)."""
    study_factors = data.get("factors", {})
    study_zip = data.get("zip", {})
    study_exclude = data.get("exclude", meta.get("exclude"))
    study_filter = data.get("filter", meta.get("filter"))
    raw = data.get("panels")
    if raw is None:
        if selected:
            raise ScenarioError(f"--panel: {selected[0]!r}: this study has no [panels]")
        return [(None, base, *_product("", study_factors, study_zip, study_exclude, study_filter))]
    if not isinstance(raw, Mapping) or not raw:
        raise ScenarioError("panels: not a table of [panels.NAME] tables")
    names = list(raw)
    if selected:
        for name in selected:
            if name not in raw:
                raise ScenarioError(f"--panel: {name!r} is not a panel of this study; panels: {', '.join(names)}")
        names = [n for n in names if n in set(selected)]
    units: list[Unit] = []
    for name in names:
        where = f"panels.{name}."
        if not re.fullmatch(r"[\w.+-]+", name):
            raise ScenarioError(f"panels.{name}: not a name of letters, digits, '_', '-', '.', '+'")
        panel = raw[name]
        if not isinstance(panel, Mapping):
            raise ScenarioError(f"panels.{name}: not a table; expected [panels.{name}] with set, factors, ...")
        _check_keys(where, panel, PANEL_KEYS)
        settings = panel.get("set", {})
        if not isinstance(settings, Mapping):
            raise ScenarioError(f'{where}set: not a table; expected e.g. {{"flows.1.cc" = "bbr"}}')
        try:
            unit_base = apply_overrides(base, settings)
        except ScenarioError as err:
            raise ScenarioError(f"{where}set: {err}") from None
        own_factors = panel.get("factors", {})
        if not isinstance(own_factors, Mapping):
            raise ScenarioError(f'{where}factors: not a table; expected "path" = [values]')
        merged = {**study_factors, **own_factors} if isinstance(study_factors, Mapping) else study_factors
        unit = _product(
            where,
            merged,
            panel.get("zip", study_zip),
            panel.get("exclude", study_exclude),
            panel.get("filter", study_filter),
        )
        units.append((name, unit_base, *unit))
    return units


def _override(panel: str | None, base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (the study's, or a panel's after its ``set``) with ``overrides`` applied.
    ``flows[*].KEY`` sets KEY on every flow entry; ``flows[N].KEY`` needs entry N to exist
    (appending a flow would change the study, not a setting of it)."""
    flows = base.get("flows") or []
    where = f"panel {panel}: " if panel is not None else ""
    # "PANEL:path" applies to that panel only.
    overrides = {
        key.partition(":")[2] if ":" in key else key: value
        for key, value in overrides.items()
        if ":" not in key or key.partition(":")[0] == panel
    }
    allowed = f"flows[0..{len(flows) - 1}] or flows[*]" if flows else "no flows[...] path"
    expanded: dict[str, Any] = {}
    for key, value in overrides.items():
        path = key.replace("__", ".").replace("flows.*", "flows[*]")
        if path.startswith("flows[*]"):
            rest = path[len("flows[*]") :]
            if not rest.startswith(".") or len(rest) < 2:
                raise ScenarioError(f"--set: {key!r} needs a flow field after flows[*], e.g. flows[*].sender_rx_usecs=50")
            expanded.update({f"flows[{i}]{rest}": value for i in range(len(flows))})
            continue
        index = re.match(r"flows(?:\[(\d+)\]|\.(\d+))", path)
        if index is not None and int(index.group(1) or index.group(2)) >= len(flows):
            raise ScenarioError(
                f"--set: {where}{key}: {len(flows)} flow entr{'y' if len(flows) == 1 else 'ies'} (allowed {allowed})"
            )
        expanded[key] = value
    try:
        return apply_overrides(base, expanded)
    except ScenarioError as err:
        raise ScenarioError(f"--set: {where}{err}") from None


def study_from_dict(
    data: Mapping[str, Any],
    *,
    root: Path = Path("."),
    source_text: str = "",
    overrides: Mapping[str, Any] | None = None,
    panels: Sequence[str] | None = None,
) -> StudySpec:
    """Validate and expand a parsed study; every point's scenario is resolved here.
    ``overrides`` set fields of the base scenario (of each panel, after its ``set``) by path
    before the factors apply, ``flows[*].KEY`` on every flow entry, ``PANEL:path`` in one panel only;
    ``panels`` selects some of the study's ``[panels.NAME]`` (default: all)."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"study: {show(data)} is not a table")
    check_values(dict(data))
    _check_keys("", data, TOP_KEYS)
    meta = data.get("study", {})
    if not isinstance(meta, Mapping):
        raise ScenarioError("study: not a table; expected [study] with name, seed, trials")
    _check_keys("study.", meta, STUDY_KEYS)
    name = meta.get("name", "study")
    if not isinstance(meta.get("description", ""), str):
        raise ScenarioError(f"study.description: {meta['description']!r} is not a string; expected a sentence or two")
    if not isinstance(meta.get("reproduces", ""), str):
        raise ScenarioError(
            f"study.reproduces: {show(meta['reproduces'])} is not a string; expected the paper and its figure, "
            'e.g. "the DualQ paper (De Schepper et al.) Figure 7"'
        )
    seed = meta.get("seed", 1)
    trials = meta.get("trials", 1)
    # The name becomes the default directory results/<name>: one path component that
    # cannot climb out (no leading '.', so neither '.' nor '..').
    if not isinstance(name, str) or not re.fullmatch(r"[\w+-][\w.+-]{0,99}", name, re.ASCII):
        raise ScenarioError(
            f"study.name: {show(name)} is not a name of at most 100 letters, digits, '_', '-', '.', '+' "
            "not starting with '.'"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ScenarioError(f"study.seed: {show(seed)} is not an integer in 0..2^63-1")
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise ScenarioError(f"study.trials: {show(trials)} is not an integer in 1..{MAX_TRIALS}; expected e.g. 10")
    metrics = meta.get("metrics")
    if metrics is not None:
        from .summary import check_metrics  # numpy, pandas: only for a study that names metrics

        check_metrics(metrics)
    report = meta.get("report", name if name in registry.builtin_studies() else None)
    if report is not None and report not in registry.builtin_studies():
        raise ScenarioError(
            f"study.report: {report!r} is not a built-in study; built-in: {', '.join(registry.builtin_studies())}"
        )

    base = _base_scenario(data, root)
    units = _panel_units(data, meta, base, panels)
    known = set(data.get("panels") or ())
    for key in overrides or {}:
        if ":" in key and key.partition(":")[0] not in known:
            raise ScenarioError(
                f"--set: {key}: {key.partition(':')[0]!r} is not a panel of this study"
                + (f"; panels: {', '.join(sorted(known))}" if known else " (it has no [panels])")
            )
    if overrides:
        units = [(panel, _override(panel, unit_base, overrides), *rest) for panel, unit_base, *rest in units]
    factors = _plan_factors(units)
    columns = [f.column for f in factors]
    if len(set(columns)) != len(columns):
        raise ScenarioError(f"factors: two factor paths map to the same catalog column ({columns})")

    total = sum(len(unit[3]) for unit in units)
    if total > MAX_POINTS or total * trials > MAX_RUNS:
        raise ScenarioError(
            f"study: {total} points × {trials} trials = {total * trials} runs; at most "
            f"{MAX_POINTS} points and {MAX_RUNS} runs (split the study)"
        )

    model = schema.model_id()
    points: list[Point] = []
    runs: list[RunSpec] = []
    seen: dict[str, str] = {}
    index = 0
    for panel, unit_base, unit_factors, combos in units:
        paths = [f.path for f in unit_factors]
        for combo in combos:
            pairs = [[path, combo[path]] for path in paths]
            if panel is not None:
                pairs.insert(0, [PANEL_FACTOR, panel])
            key = canonical_json(pairs)
            label = ", ".join(f"{p}={v}" for p, v in pairs) or "base"
            try:
                scenario_data = _apply_point(unit_base, combo, unit_factors)
                scenario_data.setdefault("name", name if panel is None else f"{name}/{panel}")
                config = scenario_from_dict(scenario_data).resolve()
            except ScenarioError as err:
                raise ScenarioError(f"point {label}: {err}") from None
            config.pop("seed", None)
            values = {f.path: None for f in factors}
            values.update({p: v for p, v in pairs})
            point = Point(index, values, key, scenario_data, config)
            points.append(point)
            index += 1
            for trial in range(trials):
                seed_t = trial_seed(seed, key, trial)
                rid = run_id({**config, "seed": seed_t}, model)
                if rid in seen:
                    raise ScenarioError(f"point {label}: trial {trial} is the same run as {seen[rid]}")
                seen[rid] = f"point {label} trial {trial}"
                runs.append(RunSpec(rid, point.index, trial, seed_t))
    return StudySpec(name, seed, trials, metrics, report, factors, points, runs, source_text, model)


def _plan_factors(units: list[Unit]) -> list[Factor]:
    """The plan's factors: "panel" first (when the study has panels), then the union of every
    panel's factors in order of first appearance (a panel leaves the others' columns empty)."""
    factors: list[Factor] = []
    by_path: dict[str, int] = {}
    if units[0][0] is not None:
        factors.append(Factor(PANEL_FACTOR, tuple(u[0] for u in units)))
        by_path[PANEL_FACTOR] = 0
    for _panel, _base, unit_factors, _combos in units:
        for factor in unit_factors:
            if factor.path == PANEL_FACTOR:
                raise ScenarioError(f"factors: {PANEL_FACTOR!r} is the panels' column; it cannot be a factor path")
            if factor.path not in by_path:
                by_path[factor.path] = len(factors)
                factors.append(factor)
                continue
            known_factor = factors[by_path[factor.path]]
            extra = tuple(
                v for v in factor.values if canonical_json(v) not in {canonical_json(k) for k in known_factor.values}
            )
            factors[by_path[factor.path]] = Factor(known_factor.path, known_factor.values + extra, known_factor.preset)
    return factors


@dataclass
class StudyOutline:
    """A study's shape without its points resolved (``study show``): its factors, its number
    of points and trials, and the distinct scenarios its points run apart from the queue
    (``bottleneck.qdisc`` and ``bottleneck.buffer`` left out), each with how many points
    run it, resolved to its engine config."""

    name: str
    trials: int
    factors: list[Factor]
    points: int
    scenarios: list[tuple[dict[str, Any], int]]


def outline_study(path: str | os.PathLike[str]) -> StudyOutline:
    """The outline of a study file or built-in study: what :func:`load_study` expands,
    without resolving and checking every point (a study of a thousand points outlines in
    tens of milliseconds; ``study run`` checks every point before it runs any)."""
    file = registry.resolve_builtin(path)
    data, _text = read_toml_file(file, "study")
    meta = data.get("study", {})
    if not isinstance(meta, Mapping):
        raise ScenarioError("study: not a table; expected [study] with name, seed, trials")
    base = _base_scenario(data, file.parent)
    units = _panel_units(data, meta, base, None)
    groups: dict[str, list[Any]] = {}
    queue = ("bottleneck.qdisc", "bottleneck.buffer")
    for _panel, unit_base, unit_factors, combos in units:
        # Points that differ only in the queue share a probe: one copy of the base per
        # distinct rest, not one per point (the deep copies were most of the outline's time).
        keys: dict[str, str] = {}
        for combo in combos:
            plain = {f.path: combo[f.path] for f in unit_factors if f.path not in queue}
            plain_key = canonical_json(plain)
            key = keys.get(plain_key)
            if key is None:
                probe = apply_overrides(unit_base, plain)
                bottleneck = probe.get("bottleneck")
                if isinstance(bottleneck, dict):
                    bottleneck.pop("buffer", None)
                    bottleneck["qdisc"] = "pfifo"
                key = keys[plain_key] = canonical_json(probe)
                groups.setdefault(key, [probe, 0])
            groups[key][1] += 1
    scenarios = []
    for probe, count in groups.values():
        probe.setdefault("name", meta.get("name", "study"))
        scenarios.append((scenario_from_dict(probe).resolve(), count))
    trials = meta.get("trials", 1)
    return StudyOutline(
        str(meta.get("name", file.stem)),
        trials if isinstance(trials, int) else 1,
        _plan_factors(units),
        sum(len(u[3]) for u in units),
        scenarios,
    )


def load_study(
    path: str | os.PathLike[str],
    *,
    overrides: Mapping[str, Any] | None = None,
    panels: Sequence[str] | None = None,
) -> StudySpec:
    """Read, validate and expand a study file, or a built-in study by name (see the
    module docstring); ``overrides`` set fields of the base scenario by path
    (``{"duration": "5s"}``) before the factors are applied."""
    file = registry.resolve_builtin(path)
    default_name = file.parent.name if file != Path(path) else file.stem
    data, text = read_toml_file(file, "study")
    if "study" in data and isinstance(data["study"], dict):
        data["study"].setdefault("name", default_name)
    else:
        data.setdefault("study", {"name": default_name})
    return study_from_dict(data, root=file.parent, source_text=text, overrides=overrides, panels=panels)
