"""Bounds on what a scenario, study or plan may hold, checked before anything is built.

The engine bounds a run (``config.rs`` ``validate()``: memory of the preallocation, flow
count, bins, times); this module bounds the plain data the front end reads first (TOML,
dicts, JSON), so no input reaches pydantic, the expansion of a study or an error
message in a shape that makes Python itself fail: nesting deeper than
:data:`MAX_DEPTH` (``RecursionError``), integers beyond 2^64 (whose ``repr`` past 4 300
digits raises ``ValueError``), NaN or infinity (refused by JSON and meaningless as a
rate or time), NUL characters (refused by every file-system call), strings and lists
too long to be anything but a mistake. Each refusal is one
:class:`~l4slab.errors.ScenarioError` line naming the field.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import ScenarioError

__all__ = ["MAX_DEPTH", "MAX_TEXT", "MAX_ITEMS", "check_values", "show"]

#: Tables and lists nested deeper than this (a scenario needs 4: flows[0].cc_params.x).
MAX_DEPTH = 32
#: Characters in one string (a qdisc spec, a label, a path).
MAX_TEXT = 10_000
#: Entries in one list or table; values in a whole document.
MAX_ITEMS = 100_000
MAX_VALUES = 1_000_000
#: Integers beyond this magnitude are no setting of the engine (its fields are ≤ 64 bits).
MAX_INT = 2**64


def show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters; never raises (an
    integer of more than 4 300 digits has no ``repr``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
        return f"<an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits>"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} characters)"


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check_values(data: Any, where: str = "") -> None:
    """Refuse, by field path, what no setting can be (see the module docstring)."""
    stack: list[tuple[Any, str, int]] = [(data, where, 0)]
    count = 0
    while stack:
        value, path, depth = stack.pop()
        count += 1
        shown = path or "scenario"
        if count > MAX_VALUES:
            raise ScenarioError(f"{where or 'input'}: more than {MAX_VALUES} values; too large to be a scenario")
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ScenarioError(f"{shown}: {value!r} is not a finite number")
        elif isinstance(value, int):
            if abs(value) >= MAX_INT:
                raise ScenarioError(f"{shown}: {show(value)} is out of range (at most 2^64)")
        elif isinstance(value, str):
            if "\0" in value:
                raise ScenarioError(f"{shown}: {show(value)} holds a NUL character")
            if len(value) > MAX_TEXT:
                raise ScenarioError(f"{shown}: {show(value)} is too long (at most {MAX_TEXT} characters)")
        elif isinstance(value, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise ScenarioError(f"{shown}: nested more than {MAX_DEPTH} levels deep")
            if len(value) > MAX_ITEMS:
                raise ScenarioError(f"{shown}: {len(value)} entries; at most {MAX_ITEMS}")
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise ScenarioError(f"{shown}: key {show(key)} is not a string")
                    if "\0" in key or len(key) > 1000:
                        raise ScenarioError(f"{shown}: key {show(key)} holds a NUL character or is too long")
                    stack.append((item, _join(path, key), depth + 1))
            else:
                for index, item in enumerate(value):
                    stack.append((item, _join(path, index), depth + 1))
