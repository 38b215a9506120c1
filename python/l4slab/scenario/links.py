"""A link's behaviour over time and on its wire, in ``tc``'s words, and the topology table.

On ``[bottleneck]`` (and on each ``[[topology.hops]]`` of a chain)::

    netem = "delay 5ms 1ms loss gemodel 1% 25%"   # tc qdisc ... netem delay D J loss ...
    rate_schedule = ["10s rate 20Mbit", "20s..22s rate 100Mbit step 100ms"]
    rate_trace = "cellular.csv"                  # lines "TIME RATE", e.g. "0.5s 12Mbit"
    aggregate = "4ms 64kb"                       # a grant every 4 ms of at most 64 kB

* ``netem``: ``delay D [J] [inorder]`` (D: propagation after the queue; J: uniform jitter
  in [D − J, D + J), netem's default distribution; packets then leave by their own times
  and may reorder, as netem's tfifo sorts them, unless ``inorder``), ``loss [random] P``
  and ``loss gemodel p r [1-h [1-k]]`` (Gilbert-Elliott; 1-h defaults to 100 %, 1-k to
  0 %: the Gilbert model).
* ``rate_schedule``: each entry is one ``tc class change ... htb rate R`` at a time,
  ``"T rate R"``; a ramp ``"T1..T2 rate R step S"`` is the sequence of such changes every
  S (default 100 ms) from the rate in force at T1 to R at T2.
* ``rate_trace``: a capacity trace file (relative to the scenario file), one ``TIME RATE``
  per line (``#`` comments; bare numbers are seconds and bit/s): a change at each line.
* ``aggregate``: ``"INTERVAL MAX_BYTES"``: the wire sends in batches at grants every
  INTERVAL, at most MAX_BYTES each (Wi-Fi A-MPDUs, DOCSIS grants).

The engine's fields (``crates/l4slab-core/src/config.rs``: ``delay_ns``, ``jitter``,
``loss``, ``rate_schedule``, ``aggregate``) are what these resolve to.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from .. import units
from ..units import UnitError

__all__ = ["parse_netem", "parse_rate_schedule", "read_rate_trace", "parse_aggregate", "parse_hops"]

#: A ramp's step when the entry gives none: one ``tc class change`` per 100 ms.
DEFAULT_RAMP_STEP_NS = 100_000_000


def _percent(word: str) -> float:
    text = word.strip()
    if not text.endswith("%"):
        raise UnitError(f"{word!r} is not a percentage; expected e.g. '1%'")
    try:
        value = float(Fraction(text[:-1])) / 100.0
    except (ValueError, ZeroDivisionError):
        raise UnitError(f"{word!r} is not a percentage; expected e.g. '1%'") from None
    if not 0.0 <= value <= 1.0:
        raise UnitError(f"{word!r} is out of range; expected 0%..100%")
    return value


def parse_netem(text: Any) -> dict[str, Any]:
    """``"delay 5ms 1ms loss gemodel 1% 25%"`` → the engine's ``delay_ns``, ``jitter``, ``loss``."""
    if not isinstance(text, str):
        raise UnitError(f"{text!r} is not a netem description; expected e.g. 'delay 5ms 1ms loss 1%'")
    words = text.split()
    out: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i].lower()
        if word == "delay" and "delay_ns" not in out:
            if i + 1 >= len(words):
                raise UnitError("netem delay: expected a time, e.g. 'delay 5ms'")
            out["delay_ns"] = units.time_ns(words[i + 1])
            i += 2
            if i < len(words) and words[i][:1].isdigit():
                out["jitter"] = {"jitter_ns": units.time_ns(words[i]), "reorder": True}
                i += 1
        elif word == "inorder" and "jitter" in out:
            out["jitter"]["reorder"] = False
            i += 1
        elif word == "loss" and "loss" not in out:
            rest = words[i + 1 :]
            if rest[:1] == ["gemodel"]:
                params = []
                j = 1
                while j < len(rest) and rest[j].endswith("%") and len(params) < 4:
                    params.append(_percent(rest[j]))
                    j += 1
                if len(params) < 2:
                    raise UnitError("netem loss gemodel: expected p and r, e.g. 'loss gemodel 1% 25%'")
                bad = params[2] if len(params) > 2 else 1.0
                good = params[3] if len(params) > 3 else 0.0
                out["loss"] = {"model": "gemodel", "p": params[0], "r": params[1], "bad_loss": bad, "good_loss": good}
                i += 1 + j
            else:
                j = 1 if rest[:1] == ["random"] else 0
                if j >= len(rest):
                    raise UnitError("netem loss: expected a percentage, e.g. 'loss 1%'")
                out["loss"] = {"model": "random", "p": _percent(rest[j])}
                i += 2 + j
        else:
            raise UnitError(
                f"{words[i]!r} is not understood here; expected 'delay D [J] [inorder]', 'loss [random] P' "
                "or 'loss gemodel p r [1-h [1-k]]'"
            )
    if "jitter" in out and out["jitter"]["jitter_ns"] > out["delay_ns"]:
        raise UnitError("netem delay: the jitter exceeds the delay; expected J <= D")
    return out


def parse_rate_schedule(entries: Any, initial_bps: int) -> list[dict[str, int]]:
    """``["10s rate 20Mbit", "20s..22s rate 100Mbit step 100ms"]`` → ``[{at_ns, rate_bps}]``."""
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise UnitError("expected a list of 'T rate R' strings, e.g. ['10s rate 20Mbit']")
    steps: list[dict[str, int]] = []
    rate = initial_bps
    last = 0
    for k, entry in enumerate(entries):
        words = entry.split()
        if len(words) not in (3, 5) or words[1].lower() != "rate" or (len(words) == 5 and words[3] != "step"):
            raise UnitError(f"[{k}] {entry!r} is not 'T rate R' or 'T1..T2 rate R step S'")
        target = units.rate_bps(words[2])
        if ".." in words[0]:
            first, second = words[0].split("..", 1)
            t1, t2 = units.time_ns(first), units.time_ns(second)
            step = units.time_ns(words[4]) if len(words) == 5 else DEFAULT_RAMP_STEP_NS
            if t2 <= t1 or step <= 0:
                raise UnitError(f"[{k}] {entry!r}: a ramp needs T1 < T2 and a step > 0")
            n = max(1, -(-(t2 - t1) // step))
            for i in range(1, n + 1):
                at = min(t1 + i * step, t2)
                steps.append({"at_ns": at, "rate_bps": rate + (target - rate) * (at - t1) // (t2 - t1)})
            start = t1
        else:
            start = units.time_ns(words[0])
            steps.append({"at_ns": start, "rate_bps": target})
        if start < last:
            raise UnitError(f"[{k}] {entry!r} comes before the entry above it; expected times in order")
        last = steps[-1]["at_ns"]
        rate = target
    return steps


def read_rate_trace(path: Any) -> list[dict[str, int]]:
    """A capacity trace file: one ``TIME RATE`` per line → ``[{at_ns, rate_bps}]``."""
    file = Path(str(path))
    try:
        text = file.read_text()
    except OSError as err:
        raise UnitError(f"{str(path)!r} cannot be read ({err.strerror})") from None
    steps: list[dict[str, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].replace(",", " ").split()
        if not body:
            continue
        if len(body) != 2:
            raise UnitError(f"{file.name}:{number}: expected 'TIME RATE', e.g. '0.5s 12Mbit'")
        when, rate = body
        try:
            at = units.time_ns(when) if not _bare(when) else int(Fraction(when) * 1_000_000_000)
            bps = units.rate_bps(rate) if not _bare(rate) else int(Fraction(rate))
        except (UnitError, ValueError) as err:
            raise UnitError(f"{file.name}:{number}: {err}") from None
        if steps and at < steps[-1]["at_ns"]:
            raise UnitError(f"{file.name}:{number}: time {when} goes back; expected times in order")
        steps.append({"at_ns": at, "rate_bps": bps})
    if not steps:
        raise UnitError(f"{file.name}: no 'TIME RATE' lines")
    return steps


def _bare(word: str) -> bool:
    try:
        Fraction(word)
    except ValueError:
        return False
    return True


def parse_aggregate(text: Any) -> dict[str, int]:
    """``"4ms 64kb"`` → ``{interval_ns, max_bytes}``."""
    words = text.split() if isinstance(text, str) else []
    if len(words) != 2:
        raise UnitError(f"{text!r} is not 'INTERVAL MAX_BYTES'; expected e.g. '4ms 64kb'")
    return {"interval_ns": units.time_ns(words[0]), "max_bytes": units.size_bytes(words[1])}


def parse_hops(value: Any) -> tuple[int, int]:
    """A flow's hops: ``1`` (one hop), ``[0, 1]`` or ``"0-1"`` (first and last)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value, value)
    if isinstance(value, str) and value.strip().isdigit():
        return (int(value), int(value))
    if isinstance(value, str) and "-" in value:
        first, _, last = value.partition("-")
        if first.strip().isdigit() and last.strip().isdigit():
            value = [int(first), int(last)]
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        and value[0] <= value[1]
    ):
        return (value[0], value[1])
    raise UnitError(f"{value!r} is not a range of hops; expected e.g. 1, [0, 1] or '0-1'")
