"""A scenario as a testbed inside the kernel backend's guest: the guest's shell script.

:func:`plan` turns a validated scenario and its resolved engine config into a
:class:`Testbed`: the ``/bin/sh`` (dash) script the guest runs as ``/l4slab/guest.sh``
(:func:`l4slab.kernel.guest.boot`) and what :mod:`.collect` needs to read its outputs.
:func:`check_config` refuses, in one line naming the field, the value and what is allowed,
every scenario field the real kernel cannot honour; nothing is silently ignored.

The testbed (every address and device exists only inside the guest, which has no NIC)::

    s<i> --veth-- rtr ==[bn: htb rate R burst B + the qdisc]==> dly --veth-- r<i>
     eth0   (rtr:s<i> netem: ACK-path delay)            (dly:r<i> netem: data-path delay)
                        <==[rv: reverse_bottleneck, if any]==

* one sender namespace ``s<i>`` and one receiver namespace ``r<i>`` per flow (so each flow
  has its own sysctls, routes and ``nstat`` counters); ``rtr`` holds the bottleneck on its
  egress ``bn`` towards ``dly``, the delay node, which fans out to the receivers;
* each flow's base RTT is two netem delays: ``fwd_delay`` (default rtt/2) on ``dly``'s egress
  to ``r<i>`` (the data direction) and ``rtt - fwd_delay`` on ``rtr``'s egress to ``s<i>``
  (the ACK direction), both ``limit 1000000`` packets. The engine puts the forward share
  before the bottleneck; here it comes after it, as on the PAM 2025 testbed, whose delay
  node sits between router and receiver. A constant delay's place in the loop changes no
  queue dynamics, only when a flow's first packet reaches the bottleneck (by ``fwd_delay``);
* the bottleneck: ``tc qdisc add dev bn root handle 1: htb default 1``,
  ``tc class add dev bn parent 1: classid 1:1 htb rate R ceil R burst B cburst B`` and the
  child ``tc qdisc add dev bn parent 1:1 handle 10: <qdisc>``, where ``<qdisc>`` is the
  resolved engine qdisc written with every parameter explicit (:func:`qdisc_words`);
* traffic: ``l4slab-flow`` (``guest/flow.c``, the project's own): ``recv`` in each ``r<i>``
  reads to the sender's FIN (or reset) and counts; ``send`` in each ``s<i>`` sets the flow's
  congestion control on its socket, sleeps until its absolute launch time on the probe's
  clock (t0 + the flow's ``start`` + the engine's own start-jitter draw,
  :func:`engine_start_offsets_ns`: the same numbers the engine uses for this seed) and
  connects, so the SYN leaves when the engine's flow opens: no control connection and no
  setup exchange in front of the data (iperf3 has both, 3-5 RTTs, and its ``-n`` ends the
  test when the client has *written* the bytes, so the receiver drops the tail still in
  flight). A bulk sender writes until the end of the run; a sized one (``bytes``) writes
  them, closes with a FIN and waits for the receiver's close (its completion time). At the
  flow's ``stop`` the sender aborts (a reset: what it had queued is not sent on). Both block
  in the kernel (256 KiB writes, reads with ``MSG_WAITALL | MSG_TRUNC``): TCP sees a reader
  that takes every segment as it arrives and a writer that keeps the send buffer full,
  while the guest returns to user space once per buffer, not per packet;
* sampling: ``l4slab-probe`` every ``bin`` from t0 (tick 0) to ``duration`` (tick
  duration/bin), tcp_info of every socket in the flows' namespaces and the qdisc/class
  statistics of ``rtr:bn`` (and ``dly:rv``); t0 is the probe's first tick. The guest runs
  with ``time-travel=inf-cpu``, so the processes the script starts cost no virtual time and
  every launch, stop and tick happens at its exact virtual instant.

Every scenario field, what the guest does with it and what is refused (:func:`check_config`,
:func:`qdisc_words`, :func:`_dualpi2_l4steam_as_mainline`) is the table of
``docs/kernel-mapping.md``, the one place it is written.
"""

from __future__ import annotations

import copy
import math
import shlex
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

from .. import schema, units
from ..errors import ScenarioError

__all__ = [
    "KernelRefused",
    "FlowPlan",
    "Testbed",
    "KERNEL_CCS",
    "PRAGUE_PAM_PARAMS",
    "check_config",
    "kernel_cc",
    "kernel_cc_params",
    "own_ccs",
    "qdisc_words",
    "engine_start_offsets_ns",
    "plan",
    "MAX_GUEST_FLOWS",
]


class KernelRefused(ScenarioError):
    """A scenario field the kernel backend cannot honour; one line, exit 2."""


#: Engine CC name → the guest kernel's module of the same algorithm.
KERNEL_CCS = {
    "reno": "reno",
    "cubic": "cubic",
    "dctcp": "dctcp",
    "bbr": "bbr",
    "prague": "prague",
    # the project's BBRv2 (linux/net/tcp_l4slab_bbr2.c over linux/patches/0003-tcp-bbr2-core.patch)
    "bbr2": "l4slab_bbr2",
    "bbr2-l4s": "l4slab_bbr2_l4s",
}
#: Engine CCs the guest kernel has no module for, with what to use instead.
_NO_KERNEL_CC = {
    "prague-v06": "the kernel has Prague v0.7 (prague), the PAM-2025 hybrid (prague with cc_params "
    "{ecn_fallback = 1, fallback_constants = 'pam2025', growth_gate = 'app_limited'}) and the PAM 2025 "
    "testbed's build (prague with cc_params {version = 'pam2025'})",
    "bbr3": "the kernel has BBRv1 (bbr) and BBRv2 (bbr2, bbr2-l4s)",
}
#: engine ``prague`` with these cc_params = the kernel's ``prague_pam`` module (the PAM 2025
#: study's Prague: the detector on, its unscaled constants, growth gated on app_limited;
#: python/l4slab/kernel/linux/net/README.md).
PRAGUE_PAM_PARAMS = {"ecn_fallback": 1, "fallback_constants": "pam2025", "growth_gate": "app_limited"}
#: engine ``prague`` with ``version`` this = ``prague_pam`` with its ``pam_version`` (the PAM 2025
#: testbed's build of the module, L4STeam/tcp-prague 90aea47f, as the engine's cc/prague/pam2025.rs).
PRAGUE_VINTAGE = "pam2025"
#: What ``prague_pam`` reads of the engine's ``cc_params`` under its own ``pam_*`` names.
_PRAGUE_PAM_OWN = ("version", "ecn_fallback", "fallback_constants", "growth_gate")
#: The Prague module's parameters both its ops read (the vintage's three are ``prague``'s own
#: and ``prague_pam``'s ``pam_*``).
_PRAGUE_SHARED = frozenset(
    {"burst_shift", "max_tso_segs", "rtt_transition", "rtt_target_us", "alpha_mode", "cwnd_mode", "cwnd_transit"}
)
#: The project's Prague module's parameters that carry an engine ``cc_params`` key of the same
#: name (tcp_l4slab_prague.c ``module_param``), written to ``/sys/module/<module>/parameters/``
#: before the flows start. They are global in a kernel: every ``prague`` flow of a scenario
#: must give the same values.
_BBR2_SHARED = frozenset({
    "min_tso_rate", "tso_rtt_shift", "high_gain", "drain_gain", "startup_cwnd_gain", "cwnd_gain",
    "cwnd_min_target", "probe_rtt_cwnd_gain", "min_rtt_win_sec", "probe_rtt_mode_ms", "probe_rtt_win_ms",
    "full_bw_thresh", "full_bw_cnt", "cwnd_tso_bduget", "extra_acked_gain", "extra_acked_win_rtts",
    "extra_acked_max_us", "ack_epoch_acked_reset_thresh", "drain_to_target", "precise_ece_ack",
    "extra_acked_in_startup", "usage_based_cwnd", "beta", "ecn_alpha_gain", "ecn_alpha_init", "ecn_factor",
    "ecn_thresh", "ecn_reprobe_gain", "loss_thresh", "full_loss_cnt", "full_ecn_cnt", "inflight_headroom",
    "bw_probe_pif_gain", "bw_probe_reno_gain", "bw_probe_max_rounds", "bw_probe_rand_rounds", "bw_probe_base_us",
    "bw_probe_rand_us", "undo", "fast_path", "fast_ack_mode", "refill_add_inc",
})
KERNEL_MODULE_PARAMS = {
    "dctcp": ("tcp_dctcp", frozenset({"shift_g", "alpha_on_init"})),
    "prague": ("tcp_l4slab_prague", _PRAGUE_SHARED | {"ecn_fallback", "fallback_constants", "growth_gate"}),
    "prague_pam": ("tcp_l4slab_prague", _PRAGUE_SHARED | set(_PRAGUE_PAM_OWN)),
    "l4slab_bbr2": ("tcp_l4slab_bbr2", _BBR2_SHARED | {"ecn_enable", "ecn_max_rtt_us", "ecn_bw_lo", "ecn_bw_hi"}),
    "l4slab_bbr2_l4s": (
        "tcp_l4slab_bbr2",
        _BBR2_SHARED | {"ecn_enable", "ecn_max_rtt_us", "bw_probe_exit", "full_bw_cnt_up", "full_bw_thresh_up",
                        "bw_probe_cwnd_gain"},
    ),
}  # fmt: skip
#: A module parameter under another sysfs name than the engine's ``cc_params`` key (the two
#: BBRv2 ops share one parameter set; L4STeam's ECN defaults differ, so they are their own).
KERNEL_PARAM_NAMES = {
    "dctcp": {"shift_g": "dctcp_shift_g", "alpha_on_init": "dctcp_alpha_on_init"},
    "l4slab_bbr2_l4s": {"ecn_enable": "l4s_ecn_enable", "ecn_max_rtt_us": "l4s_ecn_max_rtt_us"},
    "prague_pam": {key: f"pam_{key}" for key in _PRAGUE_PAM_OWN},
}
#: Modules whose boolean parameters an engine ``true``/``false`` sets (as 1/0).
KERNEL_PARAM_BOOL_MODULES = frozenset({"l4slab_bbr2", "l4slab_bbr2_l4s"})


def module_reads(module: str, sysfs_key: str) -> bool:
    """Whether ``module`` reads the parameter ``sysfs_key`` of its sysfs directory (the two
    BBRv2 ops share one directory; each reads its own ECN defaults)."""
    for other, names in KERNEL_PARAM_NAMES.items():
        if other != module and module in KERNEL_MODULE_PARAMS and sysfs_key in names.values():
            return False
    if module in KERNEL_PARAM_NAMES and sysfs_key in KERNEL_PARAM_NAMES[module]:
        return False  # the engine name the module reads under another name
    return True


#: One sender and one receiver namespace per flow; addresses 10.1.i.0/24 and 10.2.i.0/24.
MAX_GUEST_FLOWS = 64
#: ``ip route ... rto_min`` is carried in milliseconds (RTAX_RTO_MIN, include/net/tcp.h:tcp_rto_min).
RTO_MIN_UNIT_NS = 1_000_000
#: Namespaces one l4slab-probe samples (probe.c MAX_NS, 32 in all, two kept for qdiscs).
PROBE_NS = 30
#: Engine flow knobs at Linux's own behaviour when unset or at these values.
_KERNEL_OWN = {
    "tso": (True,),
    "tso_defer": (True,),
    "tso_defer_ack": ("expected",),
    "receiver_sack_compression": ("kernel",),
    "gro": (False,),
    "rx_usecs_ns": (0,),
    "sender_rx_usecs_ns": (0,),
}
#: Largest engine mss the 1500-byte veth MTU carries with timestamps (1500 - 20 - 20 - 12).
MAX_MSS = 1448
#: netem ``limit``: far above anything a run can hold in flight.
NETEM_LIMIT = 1_000_000
#: Linux's tcp_wmem defaults (Documentation/networking/ip-sysctl.rst).
LINUX_WMEM = (4096, 16384, 4194304)


def linux_rmem() -> tuple[int, int, int]:
    """tcp_rmem as the engine's mainline receiver has it (the schema's ``receiver_rcvbufs``,
    from crates/l4slab-core/src/tcp/rcvbuf.rs): 32 MiB at most from Linux 6.16 on, on a host
    with the RAM. ``tcp_init`` caps the maximum at RAM / 128, and the guest's 512 MB ran as
    with 6 MiB, so the guest always sets it."""
    low, default, high = schema.engine_schema().receiver_rcvbufs["mainline"]["tcp_rmem"]
    return int(low), int(default), int(high)

#: First receiver port; flow i's receiver listens on BASE_PORT + i.
BASE_PORT = 5201


def _refuse(where: str, value: Any, allowed: str) -> KernelRefused:
    shown = value if isinstance(value, str) else repr(value)
    return KernelRefused(f"{where}: {shown} is not supported by the kernel backend; {allowed}")


# --- congestion controls -------------------------------------------------------------------------


def _engine_default(knob: str) -> Any:
    """The engine's default of a TCP knob a config leaves unset (the schema's ``tcp_flow``)."""
    from ..schema import tcp_flow_param

    return tcp_flow_param(knob).default


def _cc_param_defaults(cc: str) -> dict[str, Any]:
    from ..schema import engine_schema

    spec = engine_schema().congestion_controls.get(cc)
    return {} if spec is None else {name: p.default for name, p in spec.params.items()}


def own_ccs(config: Mapping[str, Any]) -> frozenset[str]:
    """The congestion controls the scenario's own ``[kernel] cc_sources`` register (the
    resolved config's ``kernel`` table, :func:`l4slab.scenario.resolve.resolving_for`)."""
    table = config.get("kernel") or {}
    return frozenset(name for source in table.get("cc_sources") or [] for name in source.get("ccs") or [])


def kernel_cc(flow: Mapping[str, Any], where: str, own: Collection[str] = ()) -> str:
    """The guest kernel's module for an engine TCP flow (``cc`` and ``cc_params``); ``own``:
    the scenario's own congestion controls (:func:`own_ccs`), run as they are."""
    return _kernel_cc(flow, where, own)[0]


def kernel_cc_params(flow: Mapping[str, Any], where: str, own: Collection[str] = ()) -> dict[str, str]:
    """The module parameters (sysfs name → value) an engine TCP flow's ``cc_params`` need."""
    return _kernel_cc(flow, where, own)[1]


def _kernel_cc(flow: Mapping[str, Any], where: str, own: Collection[str] = ()) -> tuple[str, dict[str, str]]:
    cc = flow.get("cc")
    if cc in own:
        if flow.get("cc_params"):
            raise _refuse(f"{where}.cc_params", flow["cc_params"], "a congestion control of your own takes none here")
        return cc, {}
    if cc in _NO_KERNEL_CC:
        raise _refuse(f"{where}.cc", cc, _NO_KERNEL_CC[cc])
    if cc not in KERNEL_CCS:
        mine = f", {', '.join(sorted(own))} (kernel.cc_sources)" if own else ", or your own (kernel.cc_sources)"
        raise _refuse(f"{where}.cc", cc, f"allowed: {', '.join(KERNEL_CCS)}{mine}")
    defaults = _cc_param_defaults(cc)
    given = dict(flow.get("cc_params") or {})
    # Only what differs from the engine's defaults (the module's defaults are the same).
    params = {k: v for k, v in given.items() if k not in defaults or v != defaults[k]}
    module = KERNEL_CCS[cc]
    if cc == "prague" and params == PRAGUE_PAM_PARAMS:
        return "prague_pam", {}
    if cc == "prague" and given.get("version") == PRAGUE_VINTAGE:
        # The vintage's own defaults differ from v0.7's (the module's pam_* defaults are
        # the vintage's, but for ecn_fallback: written always), so what was given counts.
        module = "prague_pam"
        params.update({k: given[k] for k in _PRAGUE_PAM_OWN if k in given})
        params.setdefault("ecn_fallback", defaults.get("ecn_fallback"))
    honoured = KERNEL_MODULE_PARAMS.get(module, ("", frozenset()))[1]
    out: dict[str, str] = {}
    for key, value in params.items():
        if isinstance(value, bool) and module in KERNEL_PARAM_BOOL_MODULES:
            value = int(value)  # a kernel bool parameter reads 1/0
        if key not in honoured or not isinstance(value, (int, str)) or isinstance(value, bool):
            allowed = f"the module's parameters ({', '.join(sorted(honoured))})" if honoured else "none"
            if cc == "prague":
                allowed += ", version = 'pam2025' (the prague_pam module's pam_version), or exactly " \
                           "{ecn_fallback = 1, fallback_constants = 'pam2025', growth_gate = 'app_limited'} (the " \
                           "prague_pam module)"
            raise _refuse(f"{where}.cc_params.{key}", value, f"allowed: {allowed}")
        out[KERNEL_PARAM_NAMES.get(module, {}).get(key, key)] = str(value)
    return module, out


# --- qdiscs ---------------------------------------------------------------------------------


def _user_qdisc_params(scenario: Any, which: str) -> Mapping[str, Any]:
    link = getattr(scenario, which, None) if scenario is not None else None
    request = getattr(link, "qdisc", None)
    return dict(getattr(request, "params", {}) or {})


#: The largest value of a u32 netlink attribute: mainline dualpi2's ``memlimit`` (bytes,
#: ``TCA_DUALPI2_MEMORY_LIMIT``) and its ``step_thresh`` in packets.
U32_MAX = 2**32 - 1


def _dualpi2_l4steam_as_mainline(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The engine's ``variant l4steam`` (the L4STeam testing tree's sch_dualpi2 of 2023-24)
    as mainline's dualpi2 with the two settings that make it that tree's qdisc. Its step
    applies to an L4S packet that finds more than one packet in the L queue
    (``dualpi2_enqueue_skb``: ``qdisc_qlen(q->l_queue) > 1``), which is mainline's
    ``skb_apply_step`` (``qdisc_qlen(q->l_queue) >= q->min_qlen_step``) with ``min_qlen_step
    2``; it has no memory limit, which is mainline's ``memlimit`` at its largest, so that
    only the packet limit drops (mainline's default, ``get_memory_limit``: limit x 2 x MTU of
    ``skb->truesize``, can bind first). A ``step_thresh`` in packets is the tree's
    threshold multiplied by 1 000 (it scales the attribute by ``NSEC_PER_USEC`` even for
    packets), as the engine's variant has it. Everything else is the same code in both."""
    out = dict(values)
    for gain in ("alpha", "beta"):
        value = out.get(gain)
        try:
            below = value is not None and float(value) * 256 < 1
        except (TypeError, ValueError):
            below = False  # not a number: the engine's own check names it
        if below:
            raise _refuse(
                f"{where}.{gain}",
                value,
                "mainline's dualpi2 takes at least 1/256 Hz (the l4steam tree's 0 cannot run on the guest)",
            )
    out["min_qlen_step"] = 2
    out["memlimit"] = U32_MAX
    step = out.get("step_thresh")
    count = getattr(step, "count", None)
    if count is not None:
        scaled = count * 1000
        if scaled > U32_MAX:
            raise _refuse(
                f"{where}.step_thresh",
                f"{count}pkt",
                "variant l4steam multiplies a packet threshold by 1000; at most 4294967pkt",
            )
        out["step_thresh"] = type(step)(scaled)
    return out


def qdisc_words(qdisc: Mapping[str, Any], where: str, given: Mapping[str, Any] | None = None) -> list[str]:
    """``tc qdisc add ... <words>`` for a resolved engine qdisc: every parameter explicit,
    engine-only words refused when set (``given``: what the scenario wrote, for ``fq``'s
    ``fastpath``, whose engine default differs from Linux 7.2's behaviour)."""
    from ..qdisc import REGISTRY

    kind = qdisc.get("kind")
    spec = REGISTRY.get(kind or "")
    if spec is None:
        raise _refuse(f"{where}", kind, f"allowed: {', '.join(REGISTRY)}")
    given = dict(given or {})
    if kind == "bfifo":
        return ["bfifo", "limit", str(int(qdisc["limit_bytes"]))]
    values = spec.resolved_values(qdisc)
    if kind == "dualpi2" and values.get("variant") == "l4steam":
        values = _dualpi2_l4steam_as_mainline(values, where)
    words = [kind]
    for param in spec.params:
        value = values.get(param.name)
        if kind == "dualpi2" and param.name == "variant":
            continue
        if param.name == "uptime":
            continue  # not a tc word: the guest's clock runs to it before t0 (router_uptime_ns)
        if kind == "fq" and param.name == "fastpath":
            if "fastpath" in given and given["fastpath"] is False:
                raise _refuse(
                    f"{where}.fastpath",
                    "nofastpath",
                    "Linux 7.2's fq always has the >= 6.7 fast path; write fastpath or leave it unset",
                )
            continue
        if value is None:
            continue
        if isinstance(value, list):
            value = tuple(value)
        if param.is_flag:
            words.append(param.keyword_for(value))
        else:
            words += [param.name, param.format(value)]
    return words


# --- the engine's start jitter ----------------------------------------------------------------


def engine_start_offsets_ns(config: Mapping[str, Any]) -> list[int]:
    """Each flow's start offset in [0, start_jitter], ns, as the engine draws it for this
    seed (``traffic/scenario.rs``: ``start + jitter.below_inclusive(start_jitter)`` from the
    seed's ``StartJitter`` stream, flow by flow): read off a run of the same flows, all at
    start 0, just long enough for every draw (the draws do not depend on the start)."""
    from .. import engine

    jitter = int(config.get("start_jitter_ns", 0))
    flows = config.get("flows") or []
    if jitter == 0 or not flows:
        return [0] * len(flows)
    probe = copy.deepcopy(dict(config))
    own = own_ccs(probe)
    probe.pop("kernel", None)
    for flow in probe["flows"]:
        flow["start_ns"] = 0
        flow.pop("stop_ns", None)
        flow.pop("bytes", None)
        if flow.get("cc") in own:  # the engine draws the jitter whatever the CC: reno stands in
            flow["cc"] = "reno"
            flow.pop("cc_params", None)
        if flow.get("receiver_cc") in own:
            flow["receiver_cc"] = "reno"
    probe.pop("sources", None)
    probe.pop("capture", None)
    probe["trace_sojourn"] = False
    probe["duration_ns"] = jitter + 1_000_000
    probe["bin_ns"] = probe["duration_ns"]
    probe["warmup_ns"] = 0
    raw, _wall = engine.simulate(probe)
    starts = {int(f["id"]): f.get("start_s") for f in raw.get("flows") or []}
    out = []
    for index in range(len(flows)):
        value = starts.get(index)
        out.append(0 if value is None else max(0, min(jitter, int(round(float(value) * 1e9)))))
    return out


# --- refusals -----------------------------------------------------------------------------------


def check_config(config: Mapping[str, Any], scenario: Any = None) -> None:
    """Refuse (:class:`KernelRefused`, one line naming field, value and what is allowed)
    every field of the resolved ``config`` the kernel backend cannot honour. ``scenario``
    (the validated :class:`~l4slab.scenario.Scenario`) tells what the user wrote where the
    resolved config holds engine defaults."""
    for index, source in enumerate(config.get("sources") or []):
        raise _refuse(f"sources[{index}].kind", source.get("kind"), "the kernel backend runs [[flows]] (bulk TCP)")
    if config.get("trace_sojourn"):
        raise _refuse("trace_sojourn", True, "a real qdisc has no per-packet sojourn trace; leave it false")
    if config.get("delay_node_timer_latency_ns"):
        raise _refuse(
            "delay_node_timer_latency",
            units.format_time(int(config["delay_node_timer_latency_ns"])),
            "the guest's netem fires as its kernel's timers do; leave it unset",
        )
    flows = config.get("flows") or []
    if len(flows) > MAX_GUEST_FLOWS:
        raise _refuse(
            "flows", f"{len(flows)} flows", f"at most {MAX_GUEST_FLOWS} (one sender and one receiver namespace each)"
        )
    for which in ("bottleneck", "reverse_bottleneck"):
        link = config.get(which)
        if link is None:
            continue
        if link.get("timer_latency_ns"):
            raise _refuse(
                f"{which}.timer_latency",
                units.format_time(int(link["timer_latency_ns"])),
                "the guest's HTB watchdog fires as its kernel's timers do; leave it unset",
            )
        if int(link.get("access_rate_bps", 10_000_000_000)) != 10_000_000_000:
            raise _refuse(
                f"{which}.access_rate",
                units.format_rate(int(link["access_rate_bps"])),
                "only the default 10Gbit (the hosts' veth links have no rate)",
            )
        qdisc_words(link["qdisc"], f"{which}.qdisc", _user_qdisc_params(scenario, which))
    module_params: dict[str, list[tuple[int, str, dict[str, str]]]] = {}
    own = own_ccs(config)
    for index, flow in enumerate(flows):
        where = f"flows[{index}]"
        if flow.get("kind") != "tcp":
            raise _refuse(
                f"{where}.kind", flow.get("kind"), "allowed: tcp (UDP sources are not run by the kernel backend)"
            )
        if flow.get("reverse"):
            raise _refuse(f"{where}.direction", "reverse", "allowed: forward")
        module, params = _kernel_cc(flow, where, own)
        sysfs = KERNEL_MODULE_PARAMS.get(module, (module, None))[0]
        for other_index, other_module, other in module_params.get(sysfs, []):
            keys = {k for k in {*params, *other} if module_reads(module, k) and module_reads(other_module, k)}
            if any(params.get(k) != other.get(k) for k in keys):
                shown = ", ".join(f"{k} = {v}" for k, v in sorted(params.items())) or "the defaults"
                raise _refuse(
                    f"{where}.cc_params",
                    shown,
                    f"the same as flows[{other_index}]'s, which runs the same module {sysfs} (module parameters "
                    "are global in a kernel, not per flow)",
                )
        module_params.setdefault(sysfs, []).append((index, module, params))
        receiver_cc = flow.get("receiver_cc")
        if receiver_cc is not None and receiver_cc not in KERNEL_CCS and receiver_cc not in own:
            raise _refuse(f"{where}.receiver_cc", receiver_cc, f"allowed: {', '.join([*KERNEL_CCS, *sorted(own)])}")
        if flow.get("receiver_cc_params"):
            raise _refuse(
                f"{where}.receiver_cc_params",
                flow["receiver_cc_params"],
                "module parameters are global; leave it unset",
            )
        for name, allowed in _KERNEL_OWN.items():
            if name in flow and flow[name] not in allowed:
                shown = units.format_time(int(flow[name])) if name.endswith("_ns") else flow[name]
                field_name = name.removesuffix("_ns")
                own = {
                    "tso": "Linux TCP always builds GSO skbs; leave it unset or true",
                    "tso_defer": "Linux TCP always defers (tcp_tso_should_defer); leave it unset or true",
                    "tso_defer_ack": "the guest's tcp_tso_should_defer waits only for an ACK expected within "
                    "min(srtt/2, 1 ms); leave it unset or expected",
                    "gro": "the receivers' veth has GRO off; leave it unset or false",
                    "receiver_sack_compression": "the guest's receivers time compressed SACKs as Linux 7.2 "
                    "(a share of the RTT); leave it unset or kernel",
                }.get(name, "veth has no interrupt moderation; leave it unset or 0")
                raise _refuse(f"{where}.{field_name}", shown, own)
        if flow.get("drop_segments"):
            raise _refuse(f"{where}.drop_segments", flow["drop_segments"], "drop injection is a simulator test aid")
        if flow.get("receiver_kernel", _engine_default("receiver_kernel")) != "mainline":
            raise _refuse(
                f"{where}.receiver_kernel", flow["receiver_kernel"], "the guest runs mainline (allowed: mainline)"
            )
        if flow.get("receiver_rcvbuf", _engine_default("receiver_rcvbuf")) != "mainline":
            raise _refuse(
                f"{where}.receiver_rcvbuf",
                flow["receiver_rcvbuf"],
                "the guest runs mainline's receive-buffer autotuning (allowed: mainline)",
            )
        if flow.get("ecn_low"):
            raise _refuse(f"{where}.ecn_low", True, "mainline has no route feature ecn_low; leave it unset or false")
        mss = flow.get("mss")
        if mss is not None and int(mss) > MAX_MSS:
            raise _refuse(f"{where}.mss", mss, f"at most {MAX_MSS} bytes (the veth MTU is 1500 B, timestamps on)")
        rto_min = flow.get("rto_min_ns")
        if rto_min is not None and int(rto_min) % RTO_MIN_UNIT_NS:
            raise _refuse(
                f"{where}.rto_min",
                units.format_time(int(rto_min)),
                "a whole number of milliseconds (the route metric's unit), e.g. '200ms'",
            )


# --- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlowPlan:
    """One flow of the testbed."""

    id: int
    cc: str  # kernel module
    sender_ns: str
    receiver_ns: str
    sender_addr: str
    receiver_addr: str
    port: int
    #: The sender's connect (its SYN), ns after t0 (start + the engine's jitter draw).
    launch_ns: int
    #: Sender and receiver killed, ns after t0 (None: runs to the end).
    stop_ns: int | None
    fwd_delay_ns: int
    rev_delay_ns: int
    bytes: int | None
    receiver_cc: str


#: Bytes of each captured packet kept (``tcpdump -s``): Ethernet, IPv4 and TCP headers with
#: the largest options, as the engine's capture keeps (``trace/capture.rs`` ``SNAPLEN``).
CAPTURE_SNAPLEN = 14 + 20 + 60


@dataclass(frozen=True)
class CapturePlan:
    """The scenario's ``[capture]`` in the guest: ``tcpdump`` on one interface from t0 +
    ``start_ns`` to t0 + ``stop_ns``, every packet of the window written to
    ``capture.pcap``; the collector keeps the first ``max_packets`` (the rest missed)."""

    namespace: str
    device: str
    #: ``-Q out`` at the bottleneck (its egress, after the qdisc); both ways at a host
    egress_only: bool
    #: the pcap filter: IPv4 (no ARP), and the flow's two addresses when one is named
    pcap_filter: str
    start_ns: int
    stop_ns: int
    max_packets: int
    #: the pcapng interface name, as the engine's capture names it
    name: str


@dataclass
class Testbed:
    """The guest script and what the collector needs to read the run."""

    script: str
    flows: list[FlowPlan]
    duration_ns: int
    bin_ns: int
    #: probe output files in the run directory, the first also samples the qdiscs
    probe_files: list[str]
    #: (namespace, device) of the bottleneck and, if any, the reverse bottleneck
    bottleneck: tuple[str, str]
    reverse_bottleneck: tuple[str, str] | None
    #: virtual-time bound of the guest script, s (the clock wait included)
    limit_s: float
    qdisc: list[str] = field(default_factory=list)
    reverse_qdisc: list[str] | None = None
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the router's CoDel clock at t0 the scenario asks for (``uptime``), ns; None: the guest's own
    router_uptime_ns: int | None = None
    #: the longest the script may sleep for it, s (virtual time, free in wall time)
    clock_wait_s: float = 0.0
    #: the packet capture, if the scenario asks for one
    capture: CapturePlan | None = None


#: ``codel_get_time()`` is ``ktime_get_ns() >> CODEL_SHIFT`` (10) as a u32
#: (include/net/codel.h): the router's CoDel clock repeats every 2^42 ns (about 4 398 s).
CODEL_CLOCK_WRAP_NS = 1 << 42


def router_uptime_ns(config: Mapping[str, Any]) -> int | None:
    """The ``uptime`` the scenario's ``codel``/``fq_codel`` qdiscs set (the router's clock at
    t0, ns, modulo the CoDel clock's wrap), or None when none sets it; refuses two different
    values, since the guest has one clock."""
    found: dict[str, int] = {}
    for which in ("bottleneck", "reverse_bottleneck"):
        link = config.get(which)
        qdisc = (link or {}).get("qdisc") or {}
        if qdisc.get("uptime_ns") is not None:  # only the qdiscs that read CoDel's clock have one
            found[which] = int(qdisc["uptime_ns"]) % CODEL_CLOCK_WRAP_NS
    if len(set(found.values())) > 1:
        raise _refuse(
            "reverse_bottleneck.qdisc.uptime",
            units.format_time(int(config["reverse_bottleneck"]["qdisc"]["uptime_ns"])),
            "the guest has one clock: the bottleneck's uptime, or leave it unset",
        )
    return next(iter(found.values()), None)


def _ns_time(ns: int) -> str:
    return f"{int(ns)}ns"


def _buffer_max(config: Mapping[str, Any]) -> int:
    rate = int(config["bottleneck"]["rate_bps"])
    rtt = max((int(f.get("rtt_ns", 0)) for f in config.get("flows") or []), default=0)
    return int(2 * rate / 8 * (rtt / 1e9 + 0.2))


def plan(scenario: Any, config: Mapping[str, Any], offsets_ns: Sequence[int] | None = None) -> Testbed:
    """The guest script for ``config`` (resolved from ``scenario``); refuses first."""
    check_config(config, scenario)
    flows_cfg = config.get("flows") or []
    own = own_ccs(config)
    offsets = list(offsets_ns) if offsets_ns is not None else engine_start_offsets_ns(config)
    duration = int(config["duration_ns"])
    bin_ns = int(config["bin_ns"])
    flows: list[FlowPlan] = []
    for i, flow in enumerate(flows_cfg):
        rtt = int(flow["rtt_ns"])
        fwd = int(flow["fwd_delay_ns"]) if flow.get("fwd_delay_ns") is not None else rtt // 2
        stop = flow.get("stop_ns")
        launch = int(flow.get("start_ns", 0)) + int(offsets[i] if i < len(offsets) else 0)
        flows.append(
            FlowPlan(
                id=i,
                cc=kernel_cc(flow, f"flows[{i}]", own),
                sender_ns=f"s{i}",
                receiver_ns=f"r{i}",
                sender_addr=f"10.1.{i}.1",
                receiver_addr=f"10.2.{i}.1",
                port=BASE_PORT + i,
                launch_ns=launch,
                stop_ns=None if stop is None or int(stop) >= duration else int(stop),
                fwd_delay_ns=fwd,
                rev_delay_ns=rtt - fwd,
                bytes=None if flow.get("bytes") is None else int(flow["bytes"]),
                receiver_cc=KERNEL_CCS.get(flow.get("receiver_cc") or "cubic", flow.get("receiver_cc")),
            )
        )
    bottleneck = config["bottleneck"]
    qdisc = qdisc_words(bottleneck["qdisc"], "bottleneck.qdisc", _user_qdisc_params(scenario, "bottleneck"))
    reverse = config.get("reverse_bottleneck")
    reverse_qdisc = (
        None
        if reverse is None
        else qdisc_words(
            reverse["qdisc"], "reverse_bottleneck.qdisc", _user_qdisc_params(scenario, "reverse_bottleneck")
        )
    )
    buffer_max = _buffer_max(config)
    rmem = linux_rmem()
    wmem = (LINUX_WMEM[0], LINUX_WMEM[1], max(LINUX_WMEM[2], buffer_max))

    sysctls: dict[str, dict[str, str]] = {}
    for f, cfg in zip(flows, flows_cfg, strict=True):
        common = {"tcp_no_metrics_save": "1"}
        common["tcp_rmem"] = " ".join(map(str, rmem))
        if wmem != LINUX_WMEM:
            common["tcp_wmem"] = " ".join(map(str, wmem))
        if cfg.get("ecn_option") is not None:
            common["tcp_ecn_option"] = str(int(cfg["ecn_option"]))
        sysctls[f.sender_ns] = {
            **common,
            "tcp_ecn": str(int(cfg.get("ecn", _engine_default("ecn")))),
            "tcp_congestion_control": f.cc,
        }
        sysctls[f.receiver_ns] = {
            **common,
            "tcp_ecn": str(int(cfg.get("receiver_ecn", _engine_default("receiver_ecn")))),
            "tcp_congestion_control": f.receiver_cc,
        }

    tcp_ns = [n for f in flows for n in (f.sender_ns, f.receiver_ns)]
    chunks = [tcp_ns[k : k + PROBE_NS] for k in range(0, len(tcp_ns), PROBE_NS)] or [[]]
    probe_files = [f"probe-{k}.jsonl" for k in range(len(chunks))]
    limit_s = duration / 1e9 + 60.0
    uptime = router_uptime_ns(config)

    capture = _capture_plan(config.get("capture"), flows, duration)
    script = _script(
        config={**config, "name": getattr(scenario, "name", "")},
        flows=flows,
        flows_cfg=flows_cfg,
        qdisc=qdisc,
        reverse_qdisc=reverse_qdisc,
        sysctls=sysctls,
        chunks=chunks,
        probe_files=probe_files,
        limit_s=limit_s,
        uptime_ns=uptime,
        capture=capture,
    )
    clock_wait_s = 0.0 if uptime is None else CODEL_CLOCK_WRAP_NS / 1e9 + 1.0
    return Testbed(
        script=script,
        flows=flows,
        duration_ns=duration,
        bin_ns=bin_ns,
        probe_files=probe_files,
        bottleneck=("rtr", "bn"),
        reverse_bottleneck=None if reverse is None else ("dly", "rv"),
        limit_s=limit_s + clock_wait_s,
        qdisc=qdisc,
        reverse_qdisc=reverse_qdisc,
        sysctls=sysctls,
        router_uptime_ns=uptime,
        clock_wait_s=clock_wait_s,
        capture=capture,
    )


def _capture_plan(capture: Mapping[str, Any] | None, flows: Sequence[FlowPlan], duration: int) -> CapturePlan | None:
    """Where and when ``tcpdump`` runs for the engine config's ``capture`` (its fields
    checked by the engine: a host point names a flow, the window is inside the run)."""
    if capture is None:
        return None
    point = str(capture["point"])
    flow = capture.get("flow")
    chosen = None if flow is None else flows[int(flow)]
    pcap_filter = "ip" if chosen is None else f"ip and host {chosen.sender_addr} and host {chosen.receiver_addr}"
    start = int(capture.get("start_ns") or 0)
    stop = min(duration, int(capture["stop_ns"])) if capture.get("stop_ns") is not None else duration
    if point == "bottleneck":
        where, device, egress, name = "rtr", "bn", True, "bottleneck-egress"
    elif point in ("sender", "receiver") and chosen is not None:
        where = chosen.sender_ns if point == "sender" else chosen.receiver_ns
        device, egress, name = "eth0", False, f"{point}-{chosen.id}"
    else:
        raise _refuse("capture.point", point, "bottleneck, or sender / receiver with capture.flow")
    return CapturePlan(
        namespace=where,
        device=device,
        egress_only=egress,
        pcap_filter=pcap_filter,
        start_ns=start,
        stop_ns=max(start, stop),
        max_packets=int(capture.get("max_packets", schema.limit("capture_max_packets_default"))),
        name=name,
    )


def _capture_lines(capture: CapturePlan) -> list[str]:
    """``tcpdump`` in the capture's namespace from t0 + start to t0 + stop (``timeout``
    sends SIGINT: tcpdump writes out and says what it counted), in immediate mode (a
    packet is handed over when it arrives, not when a ring block fills), nanosecond
    timestamps. Its clock is CLOCK_REALTIME: ``capture-clocks.txt`` holds t0 and the two
    clocks read together, so the collector puts each packet on the probe's clock."""
    q = shlex.quote
    # busybox's timeout counts whole seconds: it runs to the next one, and the collector
    # keeps the packets of [start, stop) on the probe's clock
    seconds = max(1, math.ceil((capture.stop_ns - capture.start_ns) / 1e9))
    direction = " -Q out" if capture.egress_only else ""
    tcpdump = (
        f"ip netns exec {capture.namespace} timeout -s INT {seconds} "
        f"tcpdump -Z root --immediate-mode -i {capture.device}{direction} -n -s {CAPTURE_SNAPLEN} "
        f"--time-stamp-precision=nano -U -w $O/capture.pcap {q(capture.pcap_filter)}"
    )
    return [
        'echo "$T0 $(l4slab-flow clocks)" > $O/capture-clocks.txt || fail "l4slab-flow clocks"',
        f"( W=$((T0 + {capture.start_ns} - $(l4slab-flow now))); "
        '[ $W -gt 0 ] && sleep $((W / 1000000000)).$(printf %09d $((W % 1000000000))); '
        f"exec {tcpdump} ) > $O/capture.err 2>&1 &",
        "CAP=$!",
    ]


def _htb(dev: str, link: Mapping[str, Any], child: list[str]) -> list[str]:
    rate = int(link["rate_bps"])
    burst = int(link.get("burst_bytes", 1600))
    return [
        f"qdisc add dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}bit ceil {rate}bit burst {burst}b cburst {burst}b",
        f"qdisc add dev {dev} parent 1:1 handle 10: {' '.join(child)}",
    ]


def _script(
    *, config, flows, flows_cfg, qdisc, reverse_qdisc, sysctls, chunks, probe_files, limit_s, uptime_ns=None,
    capture=None,
) -> str:
    q = shlex.quote
    duration = int(config["duration_ns"])
    bin_ns = int(config["bin_ns"])
    lines: list[str] = [
        "#!/bin/sh",
        f"# l4slab kernel backend testbed for scenario {config.get('name', '')!s} (generated by l4slab.kernel.testbed)",
        "O=/l4slab",
        "PATH=/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin",
        'fail() { echo "l4slab-error: $*"; echo "$*" > $O/error.txt; exit 3; }',
        'step() { echo "l4slab: $* (uptime $(cut -d" " -f1 /proc/uptime) s)"; }',
        "cd /tmp || fail 'no /tmp'",
        "step setup",
        "for t in ip tc ss ethtool l4slab-flow l4slab-probe nstat; do command -v $t >/dev/null "
        '|| fail "the guest\'s initramfs has no $t, which the testbed needs (l4slab kernel build)"; done',
    ]
    ccs = sorted({f.cc for f in flows} | {f.receiver_cc for f in flows})
    avail = "/proc/sys/net/ipv4/tcp_available_congestion_control"
    for cc in ccs:
        lines.append(
            f'grep -qw {q(cc)} {avail} || fail "congestion control {cc}: not in this kernel (it has: $(cat {avail}))"'
        )
    # a namespace may default to a CC of the allowed list only (tcp_cong.c:
    # tcp_set_default_congestion_control): the flows' CCs join the boot's list
    allowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    lines.append(
        f'echo "$(cat {allowed}) {" ".join(ccs)}" > {allowed} || fail "tcp_allowed_congestion_control: {" ".join(ccs)}"'
    )
    names = ["rtr", "dly", *[n for f in flows for n in (f.sender_ns, f.receiver_ns)]]
    for name in names:
        lines.append(f"ip netns add {name} || fail 'ip netns add {name}'")
    lines.append("ip link add bn netns rtr type veth peer name rv netns dly || fail 'veth rtr-dly'")
    for f in flows:
        lines.append(
            f"ip link add eth0 netns {f.sender_ns} type veth peer name {f.sender_ns} netns rtr "
            f"|| fail 'veth {f.sender_ns}'"
        )
        lines.append(
            f"ip link add eth0 netns {f.receiver_ns} type veth peer name {f.receiver_ns} netns dly "
            f"|| fail 'veth {f.receiver_ns}'"
        )
    # addresses, links, routes: one `ip -b` per namespace
    batches: dict[str, list[str]] = {
        "rtr": ["link set lo up", "addr add 10.0.0.1/30 dev bn", "link set bn up"],
        "dly": ["link set lo up", "addr add 10.0.0.2/30 dev rv", "link set rv up"],
    }
    for f, cfg in zip(flows, flows_cfg, strict=True):
        i = f.id
        batches["rtr"] += [f"addr add 10.1.{i}.254/24 dev {f.sender_ns}", f"link set {f.sender_ns} up"]
        batches["dly"] += [f"addr add 10.2.{i}.254/24 dev {f.receiver_ns}", f"link set {f.receiver_ns} up"]
        sender_route = [f"default via 10.1.{i}.254 dev eth0"]
        receiver_route = [f"default via 10.2.{i}.254 dev eth0"]
        if cfg.get("init_cwnd") is not None:
            sender_route.append(f"initcwnd {int(cfg['init_cwnd'])}")
        if cfg.get("rto_min_ns") is not None:
            sender_route.append(f"rto_min {int(cfg['rto_min_ns']) // 1_000_000}ms")
        if cfg.get("mss") is not None:
            sender_route.append(f"advmss {int(cfg['mss']) + 12}")
            receiver_route.append(f"advmss {int(cfg['mss']) + 12}")
        if cfg.get("rwnd_bytes") is not None:
            receiver_route.append(f"window {int(cfg['rwnd_bytes'])}")
        if cfg.get("delayed_ack") is False:
            receiver_route.append("quickack 1")
        batches[f.sender_ns] = [
            "link set lo up",
            f"addr add {f.sender_addr}/24 dev eth0",
            "link set eth0 up",
            "route add " + " ".join(sender_route),
        ]
        batches[f.receiver_ns] = [
            "link set lo up",
            f"addr add {f.receiver_addr}/24 dev eth0",
            "link set eth0 up",
            "route add " + " ".join(receiver_route),
        ]
    batches["rtr"].append("route add 10.2.0.0/16 via 10.0.0.2 dev bn")
    batches["dly"].append("route add 10.1.0.0/16 via 10.0.0.1 dev rv")
    for name, cmds in batches.items():
        lines.append(f"ip -n {name} -b - <<'EOF' || fail 'ip setup in {name}'")
        lines += cmds
        lines.append("EOF")
    # sysctls: one shell per namespace
    sys_dir = "/proc/sys/net/ipv4"
    for name in ("rtr", "dly"):
        lines.append(f"ip netns exec {name} sh -c 'echo 1 > {sys_dir}/ip_forward' || fail 'ip_forward in {name}'")
    for name, values in sysctls.items():
        body = "; ".join(f"echo {q(v)} > {sys_dir}/{k} || exit 1" for k, v in values.items())
        shown = " ".join(f"{k}={v}" for k, v in values.items())
        lines.append(f"ip netns exec {name} sh -c {q(body)} || fail 'sysctls in {name}: {shown}'")
    # module parameters of the flows' CCs (global: check_config made every flow agree)
    written: set[tuple[str, str]] = set()
    for cfg in flows_cfg:
        module, params = _kernel_cc(cfg, "flows", own_ccs(config))
        sysfs = KERNEL_MODULE_PARAMS.get(module, ("", None))[0]
        for key, value in params.items():
            if (sysfs, key) in written:
                continue
            written.add((sysfs, key))
            path = f"/sys/module/{sysfs}/parameters/{key}"
            lines.append(f"echo {q(value)} > {path} || fail 'module parameter {path} = {value}'")
    # offloads: the senders segment in software at transmit (wire-sized packets, as behind a NIC)
    for f in flows:
        lines.append(f"ip netns exec {f.sender_ns} ethtool -K eth0 tso off gso off || fail 'ethtool in {f.sender_ns}'")
    # qdiscs
    tc: dict[str, list[str]] = {"rtr": _htb("bn", config["bottleneck"], qdisc), "dly": []}
    if reverse_qdisc is not None:
        tc["dly"] += _htb("rv", config["reverse_bottleneck"], reverse_qdisc)
    for f, cfg in zip(flows, flows_cfg, strict=True):
        if f.rev_delay_ns > 0:
            tc["rtr"].append(
                f"qdisc add dev {f.sender_ns} root netem delay {_ns_time(f.rev_delay_ns)} limit {NETEM_LIMIT}"
            )
        if f.fwd_delay_ns > 0:
            tc["dly"].append(
                f"qdisc add dev {f.receiver_ns} root netem delay {_ns_time(f.fwd_delay_ns)} limit {NETEM_LIMIT}"
            )
        if cfg.get("fq_pacing"):
            tc.setdefault(f.sender_ns, []).append("qdisc add dev eth0 root fq")
    for name, cmds in tc.items():
        if not cmds:
            continue
        lines.append(f"tc -n {name} -b - <<'EOF' || fail 'tc setup in {name}'")
        lines += cmds
        lines.append("EOF")
    lines.append("tc -n rtr -s -d qdisc show dev bn > $O/tc-setup.txt 2>&1")
    if reverse_qdisc is not None:
        lines.append("tc -n dly -s -d qdisc show dev rv >> $O/tc-setup.txt 2>&1")
    # receivers, listening before t0: l4slab-flow recv (guest/flow.c) in each receiver's
    # namespace reads to the sender's FIN (or reset) and exits; a sized flow's receiver then
    # stamps the end of its transfer (EOF) with the probe's clock and samples both sockets
    bound = int(math.ceil(limit_s))
    lines.append("step receivers")
    for f in flows:
        eof = (
            f"; l4slab-probe --once --out $O/eof-{f.id}.jsonl --tcp-ns {f.receiver_ns},{f.sender_ns} > /dev/null 2>&1"
            if f.bytes is not None
            else ""
        )
        lines.append(
            f"( l4slab-flow recv --netns {f.receiver_ns} --bind {f.receiver_addr}:{f.port} > $O/recv-{f.id}.json "
            f"2> $O/receiver-{f.id}.err & echo $! > /tmp/r{f.id}.pid; wait $!{eof} ) &"
        )
    lines.append("sleep 0.05")
    for f in flows:
        lines.append(
            f"ip netns exec {f.receiver_ns} ss -Hltn 'sport = :{f.port}' | grep -q '{f.receiver_addr}:{f.port}' || "
            f"fail \"the receiver of flow {f.id} is not listening: $(cat $O/receiver-{f.id}.err)\""
        )
    if uptime_ns is not None:
        # the router's CoDel clock (ktime_get_ns() >> 10, a u32) at t0 as the scenario's
        # `uptime`: sleep until CLOCK_MONOTONIC is that value modulo the clock's wrap (time
        # travel: a sleep costs no wall time); dash's arithmetic is 64-bit
        lines += [
            "NOW=$(l4slab-flow now) || fail 'l4slab-flow now'",
            f"W=$(( ({int(uptime_ns)} - NOW) % {CODEL_CLOCK_WRAP_NS} )); [ $W -ge 0 ] || W=$((W + {CODEL_CLOCK_WRAP_NS}))",
            'sleep $((W / 1000000000)).$(printf %09d $((W % 1000000000))) || fail "sleep to the router clock"',
            f"step 'router clock at uptime {int(uptime_ns)} ns'",
        ]
    # t0: the probes' first tick; every sender sleeps until its own absolute launch time
    # (CLOCK_MONOTONIC, the probe's clock): T0 + start + the engine's jitter draw
    lines.append("T0=$(l4slab-flow now) || fail 'l4slab-flow now'")
    qdisc_args = "--qdisc rtr:bn" + (" --qdisc dly:rv" if reverse_qdisc is not None else "")
    for k, (names_k, out) in enumerate(zip(chunks, probe_files, strict=True)):
        args = [f"--out $O/{out}", f"--interval {_ns_time(bin_ns)}", f"--duration {_ns_time(duration)}"]
        if names_k:
            args.append(f"--tcp-ns {','.join(names_k)}")
        if k == 0:
            args.append(qdisc_args)
        lines.append(f"timeout -s KILL {bound} l4slab-probe {' '.join(args)} > $O/probe-{k}.err 2>&1 &")
        lines.append(f"P{k}=$!")
    if capture is not None and capture.stop_ns > capture.start_ns:
        lines += _capture_lines(capture)
    # the senders: l4slab-flow send connects at its launch (the SYN leaves then, as the
    # engine's flow opens at its start) and writes until killed (bulk), until BYTES are
    # written (then a FIN: the receiver reads to EOF), or until the flow's stop, where it
    # aborts the connection (a reset; what it had queued is not sent on).
    for f in sorted(flows, key=lambda f: (f.launch_ns, f.id)):
        if f.launch_ns >= duration:
            continue
        extra = f" --bytes {f.bytes}" if f.bytes is not None else ""
        if f.stop_ns is not None:
            extra += f" --duration {max(1, f.stop_ns - f.launch_ns)}ns"
        lines.append(
            f"l4slab-flow send --netns {f.sender_ns} --to {f.receiver_addr}:{f.port} --cc {q(f.cc)}{extra} "
            f"--at $((T0 + {f.launch_ns})) > $O/send-{f.id}.json 2> $O/client-{f.id}.err &"
        )
        lines.append(f"C{f.id}=$!")
    lines.append("step 'all flows launched'")
    for k in range(len(probe_files)):
        lines.append(f"wait $P{k}; echo $? > $O/probe-{k}.rc")
    if capture is not None and capture.stop_ns > capture.start_ns:
        lines.append("wait $CAP; echo $? > $O/capture.rc")
    lines.append("step 'run done'")
    for f in flows:
        lines.append(f"ip netns exec {f.sender_ns} nstat -asz --json > $O/nstat-{f.sender_ns}.json 2>&1")
    lines.append("tc -n rtr -s -d qdisc show dev bn > $O/tc-final.txt 2>&1")
    lines.append("cat /proc/net/softnet_stat > $O/softnet.txt")
    senders = " ".join(f"${{C{f.id}:-}}" for f in flows)
    receivers = " ".join(f"$(cat /tmp/r{f.id}.pid 2>/dev/null)" for f in flows)
    # the senders still running end on SIGTERM with their JSON line (send-<i>.json), then
    # whatever is left is killed
    lines.append(f"kill -TERM {senders} 2>/dev/null; sleep 0.01")
    lines.append(f"kill -KILL {senders} {receivers} 2>/dev/null")
    lines.append("step end")
    lines.append("exit 0")
    return "\n".join(lines) + "\n"
