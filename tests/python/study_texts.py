"""The study files the tests write, from one place: a study is its ``[study]`` table, a
base scenario and its factors, and the tests differ only in the values they name.

:func:`small_study` is the quick study of the study machinery's tests (runs of a few
hundred milliseconds at 10 Mbit/s through a one-BDP FIFO); :func:`prague_vs_cubic` the
two-flow study the report tests render (100 Mbit/s, one Prague and one CUBIC flow at
10 ms). Both return the TOML text a user would write.
"""

from __future__ import annotations

import json


def toml_value(value) -> str:
    """``value`` as a TOML value (strings, numbers, booleans, arrays, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _table(header: str, fields: dict) -> str:
    lines = [header] + [f"{k} = {toml_value(v)}" for k, v in fields.items() if v is not None]
    return "\n".join(lines) + "\n"


def study_text(study: dict, base: dict, bottleneck: dict, flows: list[dict], factors: dict | None = None) -> str:
    """A study file: ``[study]``, ``[base]`` with its bottleneck and flows, ``[factors]``
    (keys quoted, as factor paths hold dots)."""
    text = _table("[study]", study) + base_text(base, bottleneck, flows)
    if factors:
        text += _table("[factors]", {json.dumps(k): v for k, v in factors.items()})
    return text


def base_text(base: dict, bottleneck: dict, flows: list[dict]) -> str:
    """The ``[base]`` scenario of a study: its fields, ``[base.bottleneck]`` and each ``[[base.flows]]``."""
    return (
        _table("[base]", base)
        + _table("[base.bottleneck]", bottleneck)
        + "".join(_table("[[base.flows]]", flow) for flow in flows)
    )


#: The small study's bottleneck: 10 Mbit/s through a one-BDP FIFO.
SMALL_BOTTLENECK = {"rate": "10Mbit", "qdisc": "bfifo", "buffer": "1bdp"}


def small_flows(*ccs: str) -> list[dict]:
    """One flow of each congestion control in ``ccs``, all at 10 ms."""
    return [{"cc": cc, "rtt": "10ms"} for cc in ccs]


def small_study(name: str | None = "small", trials: int | None = 1, duration: str = "300ms", bin: str = "50ms",
                ccs: tuple[str, ...] = ("cubic",), factors: dict | None = None, seed: int | None = None,
                qdisc: str = "bfifo") -> str:  # fmt: skip
    """The quick study: ``ccs`` flows at 10 ms through :data:`SMALL_BOTTLENECK` (with
    ``qdisc``); by default its factor is the last flow's congestion control against Reno,
    so it has two points."""
    if factors is None:
        factors = {f"flows.{len(ccs) - 1}.cc": [ccs[-1], "reno"]}
    return study_text({"name": name, "trials": trials, "seed": seed}, {"duration": duration, "bin": bin},
                      {**SMALL_BOTTLENECK, "qdisc": qdisc}, small_flows(*ccs), factors)  # fmt: skip


def prague_vs_cubic(name: str, seed: int, trials: int, duration: str, factors: dict, rate: str = "100Mbit",
                    labels: tuple[str, str] | None = ("prague", "cubic"), study: dict | None = None,
                    bottleneck: dict | None = None, flows: tuple[dict, dict] = ({}, {}), tail: str = "") -> str:  # fmt: skip
    """One Prague and one CUBIC flow at 10 ms over ``rate`` (buffers in BDPs of 10 ms),
    labelled ``labels`` (None: unlabelled). ``study``, ``bottleneck`` and ``flows`` add
    to (or, with None values, take from) the ``[study]`` table, the bottleneck and each
    flow; ``tail`` follows the factors (a report's panels)."""
    made = [{"label": label, "cc": cc, "rtt": "10ms", **extra}
            for label, cc, extra in zip(labels or (None, None), ("prague", "cubic"), flows)]  # fmt: skip
    text = study_text({"name": name, "seed": seed, "trials": trials, **(study or {})}, {"duration": duration},
                      {"rate": rate, "bdp_rtt": "10ms", **(bottleneck or {})}, made, factors)  # fmt: skip
    return text + tail
