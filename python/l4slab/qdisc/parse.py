"""Parsing a qdisc as the user wrote it: a ``tc`` string or a table, into a :class:`QdiscRequest`.

Every mistake (an unknown kind or parameter, a parameter given twice or conflicting
flags, a bad value) is one :class:`~l4slab.errors.ScenarioError` line naming the
field path and what is accepted; parameters tc has but the engine does not model are
refused as "not simulated" instead of being ignored.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ScenarioError
from ..units import BdpMultiple, UnitError
from .spelling import REGISTRY, Param, QdiscKind

__all__ = ["QdiscRequest", "parse_qdisc"]


@dataclass(frozen=True)
class QdiscRequest:
    """A parsed qdisc whose BDP-relative values are not resolved yet.

    ``params`` holds only the parameters the user gave (defaults are applied when
    resolving), so a ``[bottleneck] buffer`` can fill what was not given.
    """

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> QdiscKind:
        return REGISTRY[self.kind]

    def uses_bdp(self) -> bool:
        return any(isinstance(v, BdpMultiple) for v in self.params.values())

    def __str__(self) -> str:
        parts = [self.kind]
        for name, value in self.params.items():
            param = self.spec.param(name)
            if param is None:  # pragma: no cover - parse_qdisc only stores known names
                parts.append(f"{name} {value}")
            elif param.is_flag:
                parts.append(param.keyword_for(value))
            elif isinstance(value, BdpMultiple):
                parts.append(f"{name} {value}")
            else:
                parts.append(f"{name} {param.format(value)}")
        return " ".join(parts)


def _suggest(word: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _kind_or_error(kind: Any, field_path: str) -> QdiscKind:
    known = ", ".join(REGISTRY)
    if not isinstance(kind, str) or kind.strip() not in REGISTRY:
        shown = kind if not isinstance(kind, str) else kind.strip()
        hint = _suggest(shown, list(REGISTRY)) if isinstance(shown, str) else ""
        raise ScenarioError(f"{field_path}: unknown qdisc {shown!r}{hint}; supported: {known}")
    return REGISTRY[kind.strip()]


def _unknown_param(spec: QdiscKind, name: str, field_path: str) -> ScenarioError:
    if name in spec.not_simulated:
        return ScenarioError(
            f"{field_path}: {spec.name} parameter {name!r} is not simulated ({spec.not_simulated[name]})"
        )
    allowed = ", ".join(spec.param_names) or "no parameters"
    return ScenarioError(
        f"{field_path}: {spec.name} has no parameter {name!r}{_suggest(name, spec.tc_words)}; "
        f"{spec.name} takes: {allowed}"
    )


def _parse_value(param: Param, value: Any, field_path: str) -> Any:
    try:
        return param.parse_value(value)
    except UnitError as err:
        raise ScenarioError(f"{field_path}.{param.name}: {err}") from None


def _set_once(params: dict[str, Any], words: dict[str, str], param: Param, word: str, value: Any, where: str) -> None:
    """Store a value, refusing a parameter given twice (``ecn ... noecn``) with a one-line error."""
    if param.name in params:
        earlier = words[param.name]
        if earlier == word:
            raise ScenarioError(f"{where}: parameter {word!r} given twice")
        raise ScenarioError(f"{where}: {word!r} conflicts with {earlier!r}; give only one of them")
    params[param.name] = value
    words[param.name] = word


def parse_qdisc(value: Any, field_path: str = "bottleneck.qdisc") -> QdiscRequest:
    """Parse ``"bfifo limit 250000"`` or ``{"kind": "bfifo", "limit": "2bdp"}``."""
    if isinstance(value, QdiscRequest):
        return value
    if isinstance(value, str):
        return _parse_tc_string(value, field_path)
    if isinstance(value, Mapping):
        return _parse_table(value, field_path)
    raise ScenarioError(
        f"{field_path}: {value!r} is not a qdisc; expected e.g. 'bfifo limit 250000' "
        'or {kind = "pfifo", limit = "2bdp"}'
    )


def _parse_tc_string(text: str, field_path: str) -> QdiscRequest:
    tokens = text.split()
    if not tokens:
        raise ScenarioError(f"{field_path}: empty qdisc; expected e.g. 'bfifo limit 250000'")
    spec = _kind_or_error(tokens[0], field_path)
    params: dict[str, Any] = {}
    words: dict[str, str] = {}
    where = f"{field_path}: {spec.name}"
    position = 1
    while position < len(tokens):
        name = tokens[position]
        keyword = spec.keyword(name)
        if keyword is not None:
            flag, flag_value = keyword
            _set_once(params, words, flag, name, flag_value, f"{where} in {text.strip()!r}")
            position += 1
            continue
        param = spec.param(name)
        if param is None:
            raise _unknown_param(spec, name, field_path)
        if name in params:
            raise ScenarioError(f"{field_path}: {spec.name} parameter {name!r} given twice in {text!r}")
        if position + 1 >= len(tokens):
            example = param.example or param.format(param.default)
            raise ScenarioError(
                f"{field_path}: {spec.name} parameter {name!r} needs a value, e.g. '{spec.name} {name} {example}'"
            )
        _set_once(params, words, param, name, _parse_value(param, tokens[position + 1], field_path), where)
        position += 2
    return QdiscRequest(spec.name, params)


def _parse_table(table: Mapping[str, Any], field_path: str) -> QdiscRequest:
    if "kind" not in table:
        raise ScenarioError(
            f"{field_path}: a qdisc table needs 'kind' (one of {', '.join(REGISTRY)}), "
            'e.g. {kind = "bfifo", limit = "2bdp"}'
        )
    spec = _kind_or_error(table["kind"], f"{field_path}.kind")
    params: dict[str, Any] = {}
    words: dict[str, str] = {}
    where = f"{field_path}: {spec.name}"
    for name, value in table.items():
        if name == "kind":
            continue
        keyword = spec.keyword(name)
        param = spec.param(name)
        if keyword is not None and (param is None or not isinstance(param.default, bool)):
            # ``noecn = true``, ``any_ect = true``; ``noecn = false`` means ``ecn``.
            flag, flag_value = keyword
            if not isinstance(value, bool):
                raise ScenarioError(f"{field_path}.{name}: {value!r} is not a flag; expected true or false")
            if not value:
                others = [v for k, v in flag.keywords.items() if k != name]
                if len(others) != 1:
                    raise ScenarioError(f'{field_path}.{name}: false is ambiguous; set {flag.name} = "..." instead')
                flag_value = others[0]
            _set_once(params, words, flag, name, flag_value, where)
            continue
        if param is None:
            raise _unknown_param(spec, name, field_path)
        if param.is_flag:
            # ``ecn = true`` / ``ecn_mask = "any_ect"``.
            allowed = list(param.keywords.values())
            if isinstance(value, str) and value.strip() in param.keywords:
                value = param.keywords[value.strip()]
            if not any(value == v and type(value) is type(v) for v in allowed):
                expected = "true or false" if isinstance(param.default, bool) else ", ".join(map(str, allowed))
                raise ScenarioError(f"{field_path}.{name}: {value!r} is not allowed; expected {expected}")
            _set_once(params, words, param, name, value, where)
            continue
        _set_once(params, words, param, name, _parse_value(param, value, field_path), where)
    return QdiscRequest(spec.name, params)
