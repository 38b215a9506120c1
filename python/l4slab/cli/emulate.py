"""``l4slab emulate SCENARIO --out DIR [--seed N] [--set KEY=VALUE ...]``: the scenario's TCP
flows with the real kernel's stacks (iperf3 in network namespaces) through the scenario's
links and qdiscs run by the ``l4slab-emu`` binary; the same run directory as ``l4slab run``
plus ``emu_meta.json``, and the emulator's own error under the table.

Refusals (no root, no TUN, a CC the kernel lacks, a web source, …) are one line, exit 2,
before anything is created; a run where the host did not keep up is refused (exit 1) and
not written, unless ``--accept-late`` keeps it for its counts (marked in the summary and said on
stderr). docs/emulator.md."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_OK, add_scenario_command, add_set_argument, load_command_scenario


def add_parser(commands) -> None:
    cmd = add_scenario_command(
        commands,
        "emulate",
        help="run one scenario with real kernel TCP through the emulated bottleneck",
        description=(
            "Run the scenario's TCP flows with the kernel's own stacks (iperf3 in network namespaces) through "
            "the scenario's links and qdiscs, emulated in real time by l4slab-emu; write the run directory of "
            "`l4slab run` plus emu_meta.json. Needs root, /dev/net/tun, iperf3 and the l4slab-emu binary."
        ),
    )
    cmd.add_argument("--out", metavar="DIR", help="write summary.json, emu_meta.json and Parquet series here")
    cmd.add_argument("--seed", type=int, metavar="N", help="replace the scenario's seed (start jitter)")
    cmd.add_argument(
        "--accept-late",
        action="store_true",
        help="keep a run in which the host stalled the emulator (kept_up false) for its counts (packets, bytes, "
        "CE, drops); its timing is no measurement; the summary says kept_up false and why",
    )
    add_set_argument(cmd)


def command(args: argparse.Namespace) -> int:
    from ..emulate import emulate
    from .runtable import print_result

    scenario = load_command_scenario(args)
    result = emulate(scenario, accept_late=getattr(args, "accept_late", False))
    if result.meta.get("accepted_late"):
        print(f"warning: {result.meta['accepted_late']}", file=sys.stderr)
    directory = result.write(args.out) if args.out else None
    print_result(result, directory)
    return EXIT_OK
