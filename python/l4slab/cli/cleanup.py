"""``l4slab cleanup [--prefix P]``: remove what emulated runs that died (SIGKILL, a crash)
left behind: an emulator still running without its front end, the network namespaces of
dead emulators with every process inside them (``iperf3 -s``, a command flow's programs)
and their TUN devices, and the front ends' temporary work directories
(``l4slab-emu-PID-*``). Live runs are not touched. The next ``l4slab emulate`` does the
same before it starts. docs/emulator.md."""

from __future__ import annotations

import argparse
import os

from .common import EXIT_OK


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "cleanup",
        help="remove what dead emulated runs left (processes, namespaces, work directories)",
        description=(
            "Stop emulators whose front end died, delete the network namespaces of dead emulators with every "
            "process inside them, and remove the work directories of dead front ends. Live runs are untouched."
        ),
    )
    cmd.add_argument(
        "--prefix",
        metavar="P",
        help="the namespace prefix (default $L4SLAB_EMU_PREFIX, else l4se)",
    )


def command(args: argparse.Namespace) -> int:
    from ..emulate.commands import cleanup
    from ..emulate.preflight import EmulationRefused, binary_argv
    from ..emulate.run import DEFAULT_PREFIX

    prefix = args.prefix or os.environ.get("L4SLAB_EMU_PREFIX") or DEFAULT_PREFIX
    try:
        binary = binary_argv()
    except EmulationRefused:
        binary = None  # no emulator here: its namespaces cannot exist either; work dirs still go
    counts = cleanup(binary, prefix)
    print(
        f"cleanup: {counts['emulators_stopped']} orphaned emulators stopped, {counts['namespaces']} namespaces "
        f"and {counts['work_dirs']} work directories removed"
    )
    return EXIT_OK
