"""Checks made before an emulated run creates anything: one line each, naming the field,
the value and what is allowed (exit 2).

The emulator binary repeats the host checks it needs (protocol: root / CAP_NET_ADMIN,
``/dev/net/tun``, the CCs); these run first so that a scenario the front end cannot drive
(a web source, a CC parameter a real kernel has no per-socket knob for) is refused before
the binary is even started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from .. import schema
from ..errors import ScenarioError

__all__ = [
    "EmulationRefused",
    "find_binary",
    "binary_argv",
    "find_iperf3",
    "check_host",
    "check_config",
    "kernel_ccs",
    "kernel_sender_notes",
]

#: Knobs the emulated hosts keep at the kernel's default, which is the engine's (schema
#: ``tcp_flow``: include/net/tcp.h TCP_INIT_CWND, TCP_RTO_MIN; mss 1448 = 1500-byte MTU less
#: IP, TCP and timestamps); a scenario asking for another value needs a knob l4slab does not
#: set on a real host (each refusal names the field).
_KEPT_AT_DEFAULT = ("mss", "init_cwnd", "rto_min_ns", "delayed_ack", "fq_pacing", "ecn_low")


def _kernel_defaults() -> dict[str, Any]:
    return {name: schema.tcp_flow_param(name).default for name in _KEPT_AT_DEFAULT}


PROC_CCS = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


class EmulationRefused(ScenarioError):
    """An emulated run cannot start (host, binary or scenario); one line, exit 2."""


def find_binary() -> Path:
    """``l4slab-emu``: ``$L4SLAB_EMU``, then ``target/release/`` of the source tree this
    package is imported from, then ``PATH`` (the protocol's order)."""
    env = os.environ.get("L4SLAB_EMU")
    if env:
        path = Path(env)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EmulationRefused(f"L4SLAB_EMU: {env} is not an executable file")
        return path
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "Cargo.toml").is_file() and (parent / "crates").is_dir():
            target = Path(os.environ.get("CARGO_TARGET_DIR") or parent / "target")
            candidate = target / "release" / "l4slab-emu"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
            break
    found = shutil.which("l4slab-emu")
    if found:
        return Path(found)
    raise EmulationRefused(
        "l4slab-emu: the emulator binary was not found ($L4SLAB_EMU, target/release/, PATH) and the installed "
        "extension has none; build it with: cargo build --release -p l4slab-emu"
    )


def binary_argv() -> list[str]:
    """The command that runs the emulator: the binary of :func:`find_binary`, else the
    emulator built into the installed extension (``l4slab._core.emu_main``, run as
    ``python -m l4slab._emu``: what ``pip install`` ships, no cargo step)."""
    try:
        return [str(find_binary())]
    except EmulationRefused:
        # A $L4SLAB_EMU that names no executable is the user's mistake: said, not replaced.
        if not os.environ.get("L4SLAB_EMU") and _extension_has_emulator():
            return [sys.executable, "-m", "l4slab._emu"]
        raise


def _extension_has_emulator() -> bool:
    from ..engine import has_emulator

    return has_emulator()


def find_iperf3() -> Path:
    found = shutil.which("iperf3")
    if not found:
        raise EmulationRefused("iperf3: not installed (Debian/Ubuntu: apt-get install iperf3)")
    return Path(found)


def kernel_ccs(path: Path = PROC_CCS) -> list[str]:
    try:
        return path.read_text().split()
    except OSError as err:
        raise EmulationRefused(f"{path}: cannot be read ({err.strerror}); is this Linux?") from None


def check_host(need_iperf3: bool = True) -> None:
    """Root (namespaces, TUN, sysctls), ``/dev/net/tun``, ``ip``, ``ss`` and iperf3 (when a
    TCP flow is not a command flow)."""
    if not sys.platform.startswith("linux"):
        raise EmulationRefused(f"emulate: needs Linux network namespaces; this is {sys.platform}")
    if os.geteuid() != 0:
        raise EmulationRefused(
            f"emulate: needs root (network namespaces, TUN devices, per-namespace sysctls); euid is {os.geteuid()}"
        )
    if not os.path.exists("/dev/net/tun"):
        raise EmulationRefused("emulate: /dev/net/tun does not exist (modprobe tun, or give the container the device)")
    for tool in ("ip", "ss"):
        if not shutil.which(tool):
            raise EmulationRefused(f"{tool}: not installed (Debian/Ubuntu: apt-get install iproute2)")
    if need_iperf3:
        find_iperf3()


def accepted_tcp_ecn(value: int) -> bool:
    """Does this kernel accept ``net.ipv4.tcp_ecn = value``? Written in a throw-away network
    namespace (``unshare --net``), which disappears with the child: nothing to clean up."""
    if not shutil.which("unshare") or os.geteuid() != 0:
        # Cannot probe: the RFC 3168 values every kernel since 2.6.31 accepts
        # (Documentation/networking/ip-sysctl.rst, tcp_ecn).
        return value in (0, 1, 2)
    try:
        done = subprocess.run(
            ["unshare", "--net", "sh", "-c", f"echo {int(value)} > /proc/sys/net/ipv4/tcp_ecn"],
            capture_output=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def check_config(config: Mapping[str, Any], ccs: list[str] | None = None, commands: Any = ()) -> None:
    """Refuse, naming the field, what the emulated hosts cannot do: traffic sources (web,
    SYN flood) and captures (the binary forwards TCP/UDP flows only), a CC the kernel lacks,
    a ``tcp_ecn`` value it refuses, CC parameters, and host knobs l4slab keeps at the
    kernel default (``mss``, ``init_cwnd``, ``rto_min``, delayed ACKs, ``fq`` pacing,
    ``ecn_low``, ``receiver_cc``, ``rwnd``, drop injection, reverse flows), and a modelled
    host-timer lateness (``delay_node_timer_latency``, ``timer_latency``). A command flow
    (``commands``: its flow ids) runs the user's programs on hosts with the kernel's
    defaults: its TCP fields describe only its simulated counterpart and are not checked."""
    for index, source in enumerate(config.get("sources") or []):
        raise EmulationRefused(
            f"sources[{index}].kind: {source.get('kind')!r} is not supported by the emulator "
            "(it runs the scenario's [[flows]] only: TCP flows with iperf3, UDP from the emulator)"
        )
    if config.get("capture") is not None:
        raise EmulationRefused(
            "capture: packet capture is not supported by the emulator (use tcpdump in the namespaces)"
        )
    # A modelled host-timer lateness has nothing to act on: the emulated path's timers (the
    # emulator's own, the kernel's hrtimers) fire as this host's fire.
    lateness = [("delay_node_timer_latency", config.get("delay_node_timer_latency_ns"))]
    for link in ("bottleneck", "reverse_bottleneck"):
        lateness.append((f"{link}.timer_latency", (config.get(link) or {}).get("timer_latency_ns")))
    for name, mean_ns in lateness:
        if mean_ns:
            raise EmulationRefused(
                f"{name}: {mean_ns / 1000:g}us is not supported by the emulator (its timers fire as this "
                "host's do); leave it unset"
            )
    available = kernel_ccs() if ccs is None else ccs
    checked_ecn: dict[int, bool] = {}
    for index, flow in enumerate(config.get("flows") or []):
        if index in commands:
            if flow.get("reverse"):
                raise EmulationRefused(f"flows[{index}].direction: 'reverse' is not supported by the emulator")
            continue
        if flow.get("kind") != "tcp":
            continue
        where = f"flows[{index}]"
        cc = flow.get("cc")
        if cc not in available:
            raise EmulationRefused(
                f"{where}.cc: {cc!r} is not in this kernel's tcp_available_congestion_control ({', '.join(available)})"
            )
        if flow.get("cc_params"):
            raise EmulationRefused(
                f"{where}.cc_params: {flow['cc_params']!r} cannot be set per flow on a real kernel "
                "(module parameters are global); leave it unset"
            )
        receiver_cc = flow.get("receiver_cc")
        if receiver_cc not in (None, "cubic") or flow.get("receiver_cc_params"):
            raise EmulationRefused(f"{where}.receiver_cc: {receiver_cc!r} is not supported; the receiver runs cubic")
        for name, default in _kernel_defaults().items():
            if name in flow and flow[name] != default:
                raise EmulationRefused(
                    f"{where}.{name}: {flow[name]!r} is not supported by the emulator; the real hosts keep "
                    f"the kernel default {default!r}"
                )
        if flow.get("rwnd_bytes") is not None:
            raise EmulationRefused(f"{where}.rwnd: {flow['rwnd_bytes']} bytes is not supported (the kernel autotunes)")
        if flow.get("drop_segments"):
            raise EmulationRefused(f"{where}.drop_segments: drop injection is a simulator-only test aid")
        if flow.get("reverse"):
            raise EmulationRefused(f"{where}.reverse: true is not supported by the emulator (data forward only)")
        for name in ("ecn", "receiver_ecn"):
            value = int(flow.get(name, 2))
            if value not in checked_ecn:
                checked_ecn[value] = accepted_tcp_ecn(value)
            if not checked_ecn[value]:
                raise EmulationRefused(
                    f"{where}.{name}: net.ipv4.tcp_ecn={value} is refused by this kernel ({os.uname().release}); "
                    "classic ECN values 0-2 are allowed"
                )


def kernel_sender_notes(config: Mapping[str, Any]) -> list[str]:
    """One line per TCP flow whose simulated sender lacks what every Linux TCP sender has:
    GSO (forced on TCP sockets since 4.17, commit 0a6b2a1dc2a2) and TSO deferral
    (``tcp_output.c:tcp_tso_should_defer``). The emulated half runs both whatever the
    scenario says, so `l4slab compare` would set unlike senders side by side (the engine's
    ``tso_defer`` is off by default; docs/fidelity-pam-hosts.md, "TSO deferral against the real kernel")."""
    from ..schema import tcp_flow_param

    # An unset knob is the engine's default (its schema: tso on, tso_defer off).
    default = {name: bool(tcp_flow_param(name).default) for name in ("tso", "tso_defer")}
    notes = []
    for index, flow in enumerate(config.get("flows") or []):
        if flow.get("kind") != "tcp":
            continue
        missing = [name for name in ("tso", "tso_defer") if not flow.get(name, default[name])]
        if missing:
            off = " and ".join(f"{name} = false" for name in missing)
            notes.append(
                f"flows[{index}]: the simulated sender has {off}, the kernel's has GSO and TSO deferral; "
                "set tso = true, tso_defer = true to compare like with like"
            )
    return notes
