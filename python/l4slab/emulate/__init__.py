"""The emulator's Python side: real Linux TCP stacks (iperf3 in network
namespaces) through the scenario's links and qdiscs, run in user space on a wall clock by
the ``l4slab-emu`` binary (``crates/l4slab-emu``).

* :mod:`.preflight`: finding the binary and iperf3, host checks (root, TUN, the kernel's
  CCs and ``tcp_ecn`` values) and what a scenario may ask of real hosts;
* :mod:`.parse`: ``iperf3 -J`` and ``ss -tin`` parsers;
* :mod:`.run`: one emulated run (:func:`emulate`) and the merge into the run schema;
* :mod:`.compare`: simulated vs emulated, the differential verdicts.

Usage and the process protocol: docs/emulator.md.
"""

from __future__ import annotations

from .preflight import EmulationRefused, find_binary
from .run import DEFAULT_PREFIX, EmuRunResult, HostTooSlow, emulate

__all__ = ["emulate", "EmuRunResult", "EmulationRefused", "HostTooSlow", "find_binary", "DEFAULT_PREFIX"]
