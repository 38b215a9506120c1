"""pydantic's validation errors → one :class:`~l4slab.errors.ScenarioError` line.

The line names the field path (``flows[1].rate``), the value and what would have
been accepted (the field's examples, the allowed keys with a "did you mean" hint).
When several problems are found the first is reported (an unknown key first: it is
usually a typo that also causes a "missing" error) and the rest are counted.
"""

from __future__ import annotations

import difflib
from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from ..errors import ScenarioError
from .model import (
    SCENARIO_ERROR,
    Bottleneck,
    KernelInputs,
    Scenario,
    SynFlood,
    TcpFlow,
    UdpFlow,
    UdpPragueFlow,
    WebSource,
)

__all__ = ["one_line"]


def _format_loc(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "scenario"


def _union_member(part: Any) -> bool:
    """A label pydantic inserts for the member of a union a value was tried against
    (``function-plain[validate()]``, ``list[...]``): never a key (keys hold no brackets)."""
    return isinstance(part, str) and "[" in part and part.endswith("]")


def _strip_tags(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
    """Remove the union tag pydantic inserts after a flow index: ('flows', 1, 'udp', 'rate'),
    and the union-member labels after a field: ('flows', 0, 'rtt', 'list[...]', 1)."""
    cleaned: list[Any] = []
    tag = None
    for i, part in enumerate(loc):
        if part in ("tcp", "udp", "udp_prague", "web", "syn_flood") and i > 0 and isinstance(loc[i - 1], int):
            tag = part
            continue
        if _union_member(part):
            continue
        cleaned.append(part)
    return tuple(cleaned), tag


def _field(error: Mapping[str, Any]) -> tuple[Any, ...]:
    """The field an error is about: its location up to the first union-member label (a
    value of a union field fails once per member; those failures are one problem)."""
    loc = tuple(error["loc"])
    cut = next((i for i, part in enumerate(loc) if _union_member(part)), len(loc))
    return _strip_tags(loc[:cut])[0]


def _model_at(loc: tuple[Any, ...], tag: str | None) -> type[BaseModel] | None:
    if not loc:
        return Scenario
    if loc[0] == "bottleneck" and len(loc) == 1:
        return Bottleneck
    if loc[0] == "kernel" and len(loc) == 1:
        return KernelInputs
    if loc[0] == "flows" and len(loc) == 2:
        return {"udp": UdpFlow, "udp_prague": UdpPragueFlow}.get(tag or "", TcpFlow)
    if loc[0] == "sources" and len(loc) == 2:
        return SynFlood if tag == "syn_flood" else WebSource
    return None


def _example_for(loc: tuple[Any, ...], tag: str | None) -> str:
    model = _model_at(loc[:-1], tag)
    if model is None or not loc or loc[-1] not in model.model_fields:
        return ""
    examples = model.model_fields[loc[-1]].examples
    return f"; expected e.g. {', '.join(repr(e) for e in examples)}" if examples else ""


def _error_line(error: Mapping[str, Any]) -> str:
    loc, tag = _strip_tags(tuple(error["loc"]))
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == SCENARIO_ERROR:
        message = ctx["message"]
        if ctx.get("path_from_parent"):
            return f"{_format_loc(loc[:-1])}.{message}" if len(loc) > 1 else message
        return f"{_format_loc(loc)}: {message}"
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc[:-1], tag)
        allowed = sorted(model.model_fields, key=lambda name: name != "kind") if model else []
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        where = f" in a {tag} flow" if tag else ""
        return f"{_format_loc(loc)}: unknown key{where}{hint}; allowed: {', '.join(allowed)}"
    if kind == "missing":
        if loc == ("bottleneck",):
            return (
                'bottleneck: missing; add a [bottleneck] table, e.g. rate = "100Mbit" and qdisc = "bfifo limit 250000"'
            )
        if loc == ("flows",):
            return 'flows: missing; add at least one [[flows]] entry, e.g. cc = "cubic" and rtt = "10ms"'
        return f"{_format_loc(loc)}: missing{_example_for(loc, tag)}"
    if kind == "union_tag_invalid" and loc and loc[0] == "sources":
        return f"{_format_loc(loc)}.kind: {ctx.get('tag')!r} is not a source kind; expected 'web' or 'syn_flood'"
    if kind == "union_tag_invalid":
        return f"{_format_loc(loc)}.kind: {ctx.get('tag')!r} is not a flow kind; expected 'tcp', 'udp' or 'udp_prague'"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{_format_loc(loc)}: {value!r} is not a table; expected e.g. [{_format_loc(loc)}] with keys"
    if kind == "too_short" and loc == ("flows",):
        return "flows: at least one [[flows]] entry is required"
    message = error["msg"][0].lower() + error["msg"][1:]
    return f"{_format_loc(loc)}: {value!r} is invalid: {message}{_example_for(loc, tag)}"


def _most_telling(errors: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    """Of one field's errors (one per union member), the one that says most: about an
    element of a list (the deepest location), else the project's own message, else the first."""
    return min(
        enumerate(errors),
        key=lambda ie: (-len(_strip_tags(tuple(ie[1]["loc"]))[0]), ie[1]["type"] != SCENARIO_ERROR, ie[0]),
    )[1]


def one_line(err: ValidationError) -> ScenarioError:
    # One problem per field (a union field's value fails once per member).
    fields: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for error in err.errors():
        fields.setdefault(_field(error), []).append(error)
    problems = [_most_telling(errors) for errors in fields.values()]
    # An unknown key is usually a typo that also causes a "missing" error; report the typo.
    problems.sort(key=lambda e: e["type"] != "extra_forbidden")
    line = _error_line(problems[0])
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return ScenarioError(line)
