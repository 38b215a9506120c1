"""What a run costs in memory, and the bound that refuses a run the machine cannot hold.

:func:`estimate` gives the peak resident memory a run adds to the process that runs it
(`l4slab run`, a study worker), by output kind, from the resolved engine config. Each
part counts the copies the pipeline holds at its peak, with the bytes of each copy:

* **bins** (the per-bin series): the engine's vectors (8 bytes a value: ``flow_series``
  series a flow, ``bottleneck_series`` and one per sub-queue, ``time_s``; the numbers are
  the engine's, read from its schema's ``memory`` sizes, ``crates/l4slab-core/src/memory.rs``),
  handed to Python as bytes of the same size (the binding's ``take_columns`` frees each
  engine vector once its bytes exist), then the long ``flow_series`` table (a row per flow
  and bin: the series, ``time_s`` and ``flow``, and the 6 CC-state columns for a CC that
  reports them), built per flow and then concatenated, so two copies of it exist for a
  moment: ``S + max(S, 2 F)``.
* **traces** (``trace_sojourn``): per packet the bottleneck forwards, the engine's record
  as handed to Python (the schema's ``sojourn_record_bytes``: the engine's vectors are
  freed as they are handed over, but their bytes stay in the run's ``raw`` results), its
  columns in Python (time, flow, class, sojourn: 8 bytes each once widened, 32), the
  ``sojourn`` table built from them (32) and the temporary of mapping ``class`` to its
  names (8): :data:`TRACE_BYTES_PER_PACKET` beside the record. Packets are the bottleneck's rate over the run in
  frames of the smallest packet a flow sends.
* **captures**: the pcapng file twice (the engine's buffer and the Python bytes made from
  it), about 172 bytes a packet at the bottleneck (enhanced packet block, headers up to
  the snap length, the flow/sojourn comment): :data:`CAPTURE_BYTES_PER_PACKET`, for the
  packets the capture can keep (``max_packets``, or fewer if the window cannot carry them).
* **flows**: each flow's state in the engine while the run is in the engine: what the
  engine derives from its own types for a built run (``flow_state_bytes``: sender and
  its retransmit queue, receiver and its out-of-order queue, the flow's slot, NIC links,
  routes and recorder row; ``cc_state_bytes`` of its two congestion controls;
  ``gro_bytes`` with GRO; ``flow_summary_bytes``), plus :data:`ENGINE_FLOW_RUN_BYTES`,
  what a flow adds while the run is under way (measured, not derived yet); afterwards
  the Python objects the hand-over makes per flow (12 columns, each a ``bytes``, an array
  over it, a path key and a tuple; the summary's dict of ~30 values; a row of ``flows``):
  :data:`FLOW_OBJECT_BYTES`. The engine's state is many allocations under the mmap
  threshold; ``l4slab/engine.py`` trims the heap when the run returns, so it is not
  resident through the rest of the run.
* **records** (web sources): streamed in chunks into spill files (:mod:`l4slab.records`)
  and converted to Parquet one row group (:data:`l4slab.records.ROW_GROUP_ROWS` rows) at
  a time, every source in turn, so bounded by one row group however long the run and
  however many sources: :data:`RECORD_ROW_BYTES` a row (the chunk's JSON, its DataFrame,
  the pending Arrow tables, their concatenation and the Parquet writer's buffers, in
  the Arrow pool). Measured 26.6-28 MB for 16 000-32 000 requests on an idle machine and
  22-24 MB with the CPUs contended (three busy processes on two cores, as `make test`'s
  workers are): the estimate sits between, peak / estimate 0.88-1.14; a run of fewer
  requests than a row group peaks lower (10 s at 400/s).

The peak is the larger of two phases that do not overlap: the **engine phase** (each
flow's state, the series vectors and their bytes as they are handed over) and the
**Python phase** (the parts above, with :data:`FLOW_OBJECT_BYTES` a flow, plus the
larger of the records' conversion and the writer: the two run one after the other).
Runs of many flows peak in the engine phase, long runs of fine bins, traces and
captures in the Python phase. The writer's working memory (the Parquet writer and the
Arrow pool while the run directory is written) grows with the largest table written,
about :data:`WRITER_BYTES_PER_ROW` a row (1-12 MB for tables of 2 000-20 000 rows), up
to :data:`FIXED_BYTES` (15-55 MB measured for tables of 0.1-1.3 M rows). ``l4slab/engine.py``
turns off glibc's dynamic mmap threshold, so freed arrays go back to the system and the
peak is the arrays alive together, not a heap's high-water mark.

:func:`check` refuses, before anything runs, a run whose estimate exceeds the memory
it may use: ``max_memory`` (``--max-memory``), else what the machine can give the
process now (:func:`available`: ``MemAvailable`` of ``/proc/meminfo``, the address
space left under ``RLIMIT_AS`` and the cgroup's ``memory.max`` headroom, the smallest);
``--max-memory`` replaces ``MemAvailable`` but never lifts the two hard limits. A study
checks the runs that run at once together (:func:`check_concurrent`) and each worker
its own run when it starts. Should memory run out anyway, the engine's large buffers
(series, sojourn trace, capture) are reserved with allocations that may fail and any
other engine allocation failing ends the process with one line (the binding's global
allocator): never an abort.
The constants are checked against measured peaks by ``tests/python/test_memory.py``:
bins, traces, captures, flows and records each at two sizes, peak / estimate within
0.8-1.25. At scale: 400 s of a sojourn trace at 1 Gbit/s (2.64 x 10^7
packets) peaked at 2.92 GB of resident memory in ``/usr/bin/time -v l4slab run``
(estimate 2.4 GB + the interpreter's 0.13 GB: ratio 1.16).
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .errors import ScenarioError

__all__ = ["MemoryEstimate", "estimate", "available", "check", "check_concurrent", "parse_size", "human"]

#: Columns of the long flow_series table per (flow, bin) beside the engine's series
#: (``flow_series`` of the engine's ``memory`` sizes): ``time_s`` and ``flow``.
FLOW_TABLE_EXTRA_COLUMNS = 2
#: The CC-state columns a CC with a model (BBR) adds to each of its rows.
CC_STATE_COLUMNS = 6
#: Congestion controls that report a model state (``cc::CcState``): the BBR family.
CC_STATE_PREFIX = "bbr"
#: Bytes a packet of the sojourn trace holds at the peak in Python beside the engine's
#: record as handed over (the schema's ``sojourn_record_bytes``; the module docstring).
TRACE_BYTES_PER_PACKET = 32 + 32 + 8
#: Bytes a packet of a bottleneck capture holds at the peak: two copies of its pcapng block.
CAPTURE_BYTES_PER_PACKET = 2 * 172
#: Bytes a flow adds in the engine while the run is under way, beyond the state the engine
#: derives for a built run (``memory.rs`` ``flow_state_bytes``, checked against the bytes
#: building a run allocates by ``crates/l4slab-core/tests/memory_sizes.rs``) and its summary:
#: not derived yet, measured as the rest of the engine phase's peak per flow in
#: ``tests/python/test_memory.py`` (runs of 4000 and 8000 flows; in the engine's counting
#: allocator, 1000 to 2000 flows add 14.5 kB a flow with their series and summaries). It holds
#: the timer events each flow leaves in the event queue (stale entries are dropped lazily),
#: vectors' doubling slack and the series' copy in the results.
ENGINE_FLOW_RUN_BYTES = 3_900
#: Bytes of the Python objects the hand-over makes per flow: 12 columns x (``bytes`` header
#: 33, ndarray 112, path key ~70, tuple 56, dict slot ~30) and the summary dict (~30 values:
#: a dict of ~1.2 KB and its floats), measured with tracemalloc at 4.5 KB a flow of 10 bins
#: (less the 10 x 12 x 8 bytes of series counted under bins).
FLOW_OBJECT_BYTES = 3_500
#: Bytes a row of the records' pending row group costs while it is converted (module
#: docstring): the run's peak measured at 26.6-28 MB idle and 22-24 MB on contended CPUs
#: for runs of 16 000-32 000 requests (`tests/python/test_memory.py`), whose conversion
#: holds one row group (:data:`l4slab.records.ROW_GROUP_ROWS` rows).
RECORD_ROW_BYTES = 1500
#: The Parquet writer's and Arrow pool's working memory while a run directory is
#: written: about :data:`WRITER_BYTES_PER_ROW` a row of the largest table, up to
#: :data:`FIXED_BYTES` (see the module docstring).
WRITER_BYTES_PER_ROW = 600
FIXED_BYTES = 36 << 20
#: Frame bytes of a TCP segment: payload + TCP/IP headers with timestamps (52) + Ethernet (14).
TCP_HEADER_BYTES = 66
#: Frame bytes of a UDP datagram: payload + UDP/IP (28) + Ethernet (14).
UDP_HEADER_BYTES = 42


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak bytes a run adds, by output kind."""

    bins: int
    traces: int
    captures: int
    flows: int
    records: int
    fixed: int
    #: The engine phase's peak: each flow's engine state and every series vector beside
    #: its bytes as they are handed over (module docstring).
    engine: int = 0

    @property
    def python(self) -> int:
        """The Python phase's peak: the parts together, with the records' conversion and
        the writing of the run directory one after the other (the larger of the two)."""
        return self.bins + self.traces + self.captures + self.flows + max(self.records, self.fixed)

    @property
    def total(self) -> int:
        return max(self.engine, self.python)

    def largest(self) -> str:
        # Many flows peak in the engine phase, on their engine state: the part to cut is flows.
        flows = self.engine if self.engine > self.python else self.flows
        parts = {"bins": self.bins, "traces": self.traces, "captures": self.captures, "flows": flows,
                 "records": self.records}  # fmt: skip
        return max(parts, key=parts.__getitem__)


def _smallest_frame(config: Mapping[str, Any]) -> int:
    from .schema import limit, tcp_flow_param

    mss = int(tcp_flow_param("mss").default)
    sizes = []
    for flow in config.get("flows") or []:
        if flow.get("kind", "tcp") == "udp":
            sizes.append(int(flow.get("payload_bytes", 1472)) + UDP_HEADER_BYTES)
        elif flow.get("kind") == "udp_prague":
            # Full-size packets above ≈ 1 Mbit/s (the algorithm sizes them rate × vrtt / 2).
            largest = flow.get("max_packet_bytes", limit("udp_prague_max_packet_bytes_default"))
            sizes.append(int(largest) + UDP_HEADER_BYTES)
        else:
            sizes.append(int(flow.get("mss", mss)) + TCP_HEADER_BYTES)
    for source in config.get("sources") or []:
        if source.get("kind") == "web":
            sizes.append(int(source.get("mss", mss)) + TCP_HEADER_BYTES)
        elif source.get("kind") == "syn_flood":
            sizes.append(int(source.get("syn_bytes", 54)))
    return max(54, min(sizes, default=mss + TCP_HEADER_BYTES))


def _classes(config: Mapping[str, Any]) -> int:
    kind = ((config.get("bottleneck") or {}).get("qdisc") or {}).get("kind")
    return 2 if kind == "dualpi2" else 0


def _flow_state(flow: Mapping[str, Any], sizes: Mapping[str, Any]) -> int:
    """A flow's state in the engine, as the engine derives it from its types (``memory.rs``
    ``flow_state_bytes``): the flow, its sender's and receiver's congestion controls and,
    with GRO, the receiver's batch."""
    ccs = sizes["cc_state_bytes"]
    base = int(sizes["flow_state_bytes"]) + int(sizes["flow_summary_bytes"]) + ENGINE_FLOW_RUN_BYTES
    if flow.get("kind", "tcp") != "tcp":
        return base
    return (base + int(ccs.get(flow.get("cc"), 0)) + int(ccs.get(flow.get("receiver_cc") or "cubic", 0))
            + (int(sizes["gro_bytes"]) if flow.get("gro") else 0))  # fmt: skip


def estimate(config: Mapping[str, Any]) -> MemoryEstimate:
    """The peak bytes a run of the resolved engine ``config`` adds (module docstring)."""
    from .records import ROW_GROUP_ROWS
    from .schema import limit, memory_sizes

    sizes = memory_sizes()
    value = int(sizes["series_value_bytes"])
    duration = int(config.get("duration_ns", 0))
    bin_ns = max(1, int(config.get("bin_ns", 1)))
    bins = math.ceil(duration / bin_ns)
    flows = list(config.get("flows") or [])
    n_flows = len(flows)
    state_flows = sum(1 for f in flows if str(f.get("cc", "")).startswith(CC_STATE_PREFIX))
    flow_series = int(sizes["flow_series"])
    engine = bins * (n_flows * flow_series + int(sizes["bottleneck_series"]) + _classes(config) + 1) * value
    columns = flow_series + FLOW_TABLE_EXTRA_COLUMNS + (CC_STATE_COLUMNS if state_flows else 0)
    table = bins * n_flows * columns * value
    series = engine + max(engine, 2 * table)
    # Engine phase: each flow's state, and each series vector beside its bytes as handed over.
    engine_phase = sum(_flow_state(f, sizes) for f in flows) + 2 * engine
    rate = int((config.get("bottleneck") or {}).get("rate_bps", 0))
    frame = _smallest_frame(config)
    traces = 0
    trace_packet = TRACE_BYTES_PER_PACKET + int(sizes["sojourn_record_bytes"])
    if config.get("trace_sojourn"):
        traces = rate * duration // 8 // 10**9 // frame * trace_packet
    captures = 0
    capture = config.get("capture")
    if capture:
        start = int(capture.get("start_ns", 0))
        stop = int(capture.get("stop_ns") or duration)
        window = max(0, min(stop, duration) - start)
        passing = rate * window // 8 // 10**9 // frame
        if capture.get("point", "bottleneck") != "bottleneck":
            passing *= 2  # an endpoint sees data and ACKs
        kept = int(capture.get("max_packets", limit("capture_max_packets_default")))
        captures = min(kept, passing) * CAPTURE_BYTES_PER_PACKET
    # Web sources' records are converted one row group at a time, all sources in turn.
    web = any(s.get("kind") == "web" for s in config.get("sources") or [])
    records = ROW_GROUP_ROWS * RECORD_ROW_BYTES if web else 0
    # The writer's working memory grows with the largest table it writes, up to FIXED_BYTES.
    rows = max(bins * max(n_flows, 1), traces // trace_packet)
    writer = min(FIXED_BYTES, rows * WRITER_BYTES_PER_ROW)
    return MemoryEstimate(series, traces, captures, n_flows * FLOW_OBJECT_BYTES, records, writer,
                          engine_phase)  # fmt: skip


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _own(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> int | None:
    """``memory.max - memory.current`` of this process's cgroup (v2), or None."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
        group = Path("/sys/fs/cgroup") / line.split("::", 1)[1].lstrip("/")
        limit = (group / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int((group / "memory.current").read_text())
    except (OSError, ValueError, IndexError):
        return None


def available(*, hard_only: bool = False) -> tuple[int, str] | None:
    """The memory this process may still take and where that bound comes from, or None
    when nothing can be read (not Linux). ``hard_only``: only the limits no setting can
    lift (the address space under ``RLIMIT_AS``, the cgroup's ``memory.max``), not the
    machine's ``MemAvailable`` (which the kernel can grow by dropping caches)."""
    bounds: list[tuple[int, str]] = []
    mem = None if hard_only else _meminfo("MemAvailable")
    if mem is not None:
        bounds.append((mem, "available on this machine (MemAvailable)"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    size = _own("VmSize")
    if soft != resource.RLIM_INFINITY and size is not None:
        bounds.append((soft - size, "left under the address-space limit (ulimit -v)"))
    headroom = _cgroup_headroom()
    if headroom is not None:
        bounds.append((headroom, "left in this cgroup (memory.max)"))
    return min(bounds) if bounds else None


_SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
               "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_size(text: str, flag: str = "--max-memory") -> int:
    """``"8GB"``, ``"512MiB"``, ``"2e9"`` → bytes; anything else is one line naming ``flag``."""
    import re

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match[2].lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise ScenarioError(f"{flag}: {text!r} is not a size (e.g. 8GB, 512MiB)")
    value = float(match[1]) * _SIZE_UNITS[unit]
    if not 0 < value < 2**63:
        raise ScenarioError(f"{flag}: {text!r} is out of range (more than 0 B)")
    return int(value)


def human(n: int) -> str:
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


_ADVICE = {
    "bins": "use wider bins (bin) or a shorter run",
    "traces": "turn trace_sojourn off or shorten the run",
    "captures": "lower capture.max_packets or narrow its window",
    "flows": "use fewer flows",
    "records": "a run with web sources needs this to convert its records (one row group at a time)",
}


def _bound(max_memory: int | None) -> tuple[int, str] | None:
    """The memory a run (or a study's runs at once) may use and where that bound comes from:
    ``max_memory`` (else ``L4SLAB_MAX_MEMORY``) in place of ``MemAvailable``, never above a
    hard limit (``ulimit -v``, the cgroup): past those an allocation fails."""
    if max_memory is None and os.environ.get("L4SLAB_MAX_MEMORY"):
        max_memory = parse_size(os.environ["L4SLAB_MAX_MEMORY"], "L4SLAB_MAX_MEMORY")
    bound = available(hard_only=max_memory is not None)
    if max_memory is not None and (bound is None or max_memory <= bound[0]):
        bound = (max_memory, "allowed by --max-memory")
    return bound


def _part(found: MemoryEstimate) -> tuple[str, int]:
    kind = found.largest()
    return kind, found.engine if kind == "flows" and found.engine > found.python else getattr(found, kind)


def check_concurrent(configs: Mapping[str, Mapping[str, Any]], workers: int,
                     max_memory: int | None = None) -> int:  # fmt: skip
    """Refuse (one :class:`ScenarioError` line), before a study runs anything, runs that
    cannot fit at once: ``workers`` of them run together, so the ``workers`` largest
    estimates of ``configs`` (run id -> resolved config) together must fit in what
    :func:`check` allows one run. Return that sum."""
    if not configs:
        return 0
    found = {rid: estimate(config) for rid, config in configs.items()}
    largest = sorted(found, key=lambda rid: found[rid].total, reverse=True)[: max(1, workers)]
    need = sum(found[rid].total for rid in largest)
    bound = _bound(max_memory)
    if bound is None or need <= bound[0]:
        return need
    limit, where = bound
    kind, part = _part(found[largest[0]])
    together = f"{len(largest)} runs at once (--jobs {len(largest)}) need" if len(largest) > 1 else "run needs"
    raise ScenarioError(
        f"memory: {together} ~{human(need)} (the largest, run {largest[0][:12]}: ~{human(found[largest[0]].total)}, "
        f"{kind}: ~{human(part)}); {human(max(limit, 0))} {where}; "
        f"{'use fewer --jobs or ' if len(largest) > 1 else ''}{_ADVICE[kind]}"
    )


def check(config: Mapping[str, Any], max_memory: int | None = None) -> MemoryEstimate:
    """Refuse (one :class:`ScenarioError` line) a run whose estimate exceeds ``max_memory``
    (or, without it, the memory available now) or a hard limit (``ulimit -v``, the cgroup);
    return the estimate."""
    found = estimate(config)
    bound = _bound(max_memory)
    if bound is None:
        return found
    limit, where = bound
    if found.total > limit:
        kind, part = _part(found)
        raise ScenarioError(
            f"memory: this run needs ~{human(found.total)} ({kind}: ~{human(part)}); "
            f"{human(max(limit, 0))} {where}; {_ADVICE[kind]}"
        )
    return found
