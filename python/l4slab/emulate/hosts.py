"""The host a user program ran on, as the program measured it: ``l4slab-udp-prague`` writes
each end's wake-up latency (``wake_us``) and the sender's timer lateness (``timer_late_us``),
each with its quantiles; the engine's ``udp_prague`` flow takes them as
``sender_wake_latency``, ``receiver_wake_latency`` and ``sender_timer_latency``
(docs/udp-prague.md). Read by ``l4slab emulate`` (the summary's ``program_hosts``) and
``l4slab compare --host measured``."""

from __future__ import annotations

import json
from typing import Mapping, Sequence

__all__ = ["HOST_KEYS", "HOST_PROGRAM", "measured_hosts", "pooled_quantiles", "quantile"]

#: The program whose output carries a measured host.
HOST_PROGRAM = "l4slab-udp-prague"


#: What each end's output measures, and the engine knob it becomes (``<knob>_quantiles_ns``;
#: its ``tail``, the top step's own quantiles, ``<knob>_tail_quantiles_ns``).
_HOST_MEASURES = {"send": (("wake_us", "sender_wake"), ("timer_late_us", "sender_timer"), ("busy_us", "sender_busy")),
                  "recv": (("wake_us", "receiver_wake"), ("busy_us", "receiver_busy"))}  # fmt: skip

#: Each knob's scenario key on a ``udp_prague`` flow (a mean, or the quantiles; ``<key>_tail``
#: the tail's); the engine's mean field is the key with ``_ns``.
HOST_KEYS = {
    "sender_wake": "sender_wake_latency",
    "receiver_wake": "receiver_wake_latency",
    "sender_timer": "sender_timer_latency",
    "sender_busy": "sender_busy_time",
    "receiver_busy": "receiver_busy_time",
}
#: The same with each knob's tail (``<knob>_tail``, key ``<key>_tail``), as ``measured_hosts`` names them.
HOST_KEYS.update({f"{knob}_tail": f"{key}_tail" for knob, key in list(HOST_KEYS.items())})


def measured_hosts(outputs: Mapping[int, Mapping[str, bytes]]) -> dict[int, dict[str, list[float]]]:
    """Per command flow, the latency quantiles (µs) its ``l4slab-udp-prague`` ends measured,
    ``{flow: {"sender_wake": [...], "receiver_wake": [...], "sender_timer": [...], "sender_busy":
    [...], "receiver_busy": [...]}}``, each with its top step's own quantiles as ``<knob>_tail``
    where the program wrote them (what an end measured none of is absent), read from every JSON
    file the flow's commands wrote."""
    hosts: dict[int, dict[str, list[float]]] = {}
    for flow, files in outputs.items():
        for name, raw in files.items():
            if not name.endswith(".json"):
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(data, dict) or data.get("program") != HOST_PROGRAM:
                continue
            for field, knob in _HOST_MEASURES.get(data.get("role"), ()):
                measured = data.get(field) or {}
                quantiles = measured.get("quantiles")
                if measured.get("count") and isinstance(quantiles, list) and len(quantiles) >= 2:
                    hosts.setdefault(flow, {})[knob] = [float(v) for v in quantiles]
                    tail = measured.get("tail")
                    if isinstance(tail, list) and len(tail) >= 2:
                        hosts[flow][f"{knob}_tail"] = [float(v) for v in tail]
    return hosts


def pooled_quantiles(lists: Sequence[Sequence[float]]) -> list[float]:
    """Several measured distributions pooled with equal weight, as quantiles at as many
    evenly spaced probabilities as each has (all of one length)."""
    n = len(lists[0])
    points = sorted(v for values in lists for v in values)
    return [points[round(k * (len(points) - 1) / (n - 1))] for k in range(n)]


def quantile(q: Sequence[float], p: float) -> float:
    """The point of evenly spaced quantiles ``q`` nearest to probability ``p``."""
    return q[round(p * (len(q) - 1))]
