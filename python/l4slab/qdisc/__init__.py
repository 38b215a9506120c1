"""The bottleneck's child qdisc, written as in ``tc qdisc add ... <qdisc>``.

Two spellings are accepted:

* a ``tc`` string: ``"bfifo limit 250000"``, ``"pfifo limit 167"``, ``"bfifo"``;
* a structured table: ``{kind = "bfifo", limit = "2bdp"}``.

The engine describes each kind it implements (:mod:`l4slab.schema`: engine fields,
``ParamKind``, defaults, ranges, docs); this module keeps only how ``tc`` spells it:
keyword → engine field, the unit parser of each ``ParamKind``, flag pairs
(``ecn``/``noecn``), bare choices (``l4s_ect``), parameters tc has but the engine does
not model, and checks across parameters. :data:`REGISTRY` joins the two: every kind
the engine lists, spelled by :data:`SPELLINGS` or, for a kind without a table here,
by its engine fields without unit suffix (``target_ns`` → ``target``).

Buffer limits may be given relative to the bandwidth-delay product, as the PAM 2025
study did (PAM 2025 paper §3): with ``BDP = rate × RTT / 8`` bytes and ``n`` BDPs,

* byte limits (bfifo): ``int(n · BDP)`` bytes;
* packet limits (pfifo and the AQMs): ``int(int(n · BDP) / 1500) + 1`` packets,

so ``2bdp`` at 100 Mbit/s and 10 ms is ``bfifo limit 250000`` or ``pfifo limit 167``.

Kinds and their ``tc`` parameters (defaults as each qdisc's Linux ``*_init`` sets them,
read from the engine's schema; every parameter the engine models is accepted, the
others are refused with a one-line "not simulated" error instead of being ignored):

* ``bfifo`` / ``pfifo``: limit.
* ``fq``: limit, flow_limit, quantum, initial_quantum, refill_delay, orphan_mask,
  buckets, ce_threshold; l4slab extension ``fastpath``/``nofastpath`` (the Linux ≥ 6.7
  internal FIFO, off by default). Not simulated: maxrate, pacing/nopacing,
  low_rate_threshold, horizon, horizon_drop/horizon_cap, timer_slack, priomap, weights.
* ``pie``: limit, target, tupdate, alpha, beta, ecn/noecn, bytemode/nobytemode,
  dq_rate_estimator/no_dq_rate_estimator.
* ``codel``: limit, target, interval, ecn/noecn, ce_threshold.
* ``fq_codel``: limit, flows, target, interval, quantum, ecn/noecn, ce_threshold,
  ce_threshold_selector VALUE/MASK, memory_limit, drop_batch.
* ``dualpi2``: limit, memlimit, target, tupdate, alpha, beta, step_thresh (a time or
  ``Npkt``), min_qlen_step, coupling_factor, drop_on_overload/overflow,
  drop_enqueue/drop_dequeue, l4s_ect/any_ect (and mainline's cla_ect),
  classic_protection, split_gso/no_split_gso; l4slab extension ``variant
  mainline|l4steam`` (which kernel's DualPI2 to reproduce). Not simulated: max_rtt,
  typical_rtt (tc's helper deriving target/tupdate/alpha/beta).

Times are carried by ``tc`` as whole microseconds: ``"1500ns"`` becomes 1 µs, as tc
truncates. ``limit`` of every packet-limited qdisc (and fq's ``flow_limit``) accepts
``Nbdp`` with the packet rule above.

Modules: :mod:`.values` (tc value parsers), :mod:`.spelling` (each kind's tc words,
joined with the engine's schema; :data:`REGISTRY`), :mod:`.parse` (tc string or
table → :class:`QdiscRequest`), :mod:`.resolve` (defaults, buffer, BDP, ranges →
engine config).
"""

from __future__ import annotations

from .parse import QdiscRequest, parse_qdisc
from .resolve import PAM_PACKET_BYTES, bdp_to_bytes, bytes_to_packets, resolve_qdisc
from .spelling import REGISTRY, SPELLINGS, Param, QdiscKind, describe_engine_qdisc
from .values import PacketCount

__all__ = [
    "Param",
    "QdiscKind",
    "QdiscRequest",
    "PacketCount",
    "REGISTRY",
    "SPELLINGS",
    "parse_qdisc",
    "resolve_qdisc",
    "describe_engine_qdisc",
    "bdp_to_bytes",
    "bytes_to_packets",
    "PAM_PACKET_BYTES",
]
