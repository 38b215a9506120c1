"""``l4slab run SCENARIO [--out DIR] [--seed N] [--set KEY=VALUE ...]``: one run, a summary table,
the ``tc -s``-like qdisc block and (with ``--out``) the run directory.

``--out`` is checked before the run (exit 2 for a file or an unwritable place) and the
run directory is written before anything is printed."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, add_scenario_command, add_set_argument, load_command_scenario
from .runtable import print_result


def add_parser(commands) -> None:
    run_cmd = add_scenario_command(
        commands,
        "run",
        help="run one scenario",
        description="Run one scenario, print a summary table and (with --out) write the output files.",
    )
    run_cmd.add_argument("--out", metavar="DIR", help="write summary.json, scenario.json and Parquet series here")
    run_cmd.add_argument("--seed", type=int, metavar="N", help="replace the scenario's seed")
    add_set_argument(run_cmd, "--set bottleneck.rate=50Mbit --set flows[0].cc=reno")
    run_cmd.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="refuse, before running, a run whose memory estimate exceeds SIZE (e.g. 8GB, 512MiB); "
        "default: the memory available now (docs/reference.md, limits)",
    )
    run_cmd.add_argument(
        "--backend",
        choices=("sim", "emulate", "kernel"),
        default="sim",
        help="sim: the engine (default); emulate: real kernel TCP through the emulator (as `l4slab emulate`); "
        "kernel: the whole scenario on a real Linux kernel in a virtual-time UML guest (docs/kernel.md)",
    )


def command(args: argparse.Namespace) -> int:
    from ..memory import parse_size
    from ..runner import run

    if getattr(args, "backend", "sim") == "emulate":
        from . import emulate

        return emulate.command(args)
    if getattr(args, "backend", "sim") == "kernel":
        return _kernel(args)
    scenario = load_command_scenario(args)
    max_memory = None if args.max_memory is None else parse_size(args.max_memory)
    result = run(scenario, max_memory=max_memory)
    # Results first: the run directory exists even if printing fails (`| head -1`).
    directory = result.write(args.out) if args.out else None
    print_result(result, directory)
    return EXIT_OK


def _kernel(args: argparse.Namespace) -> int:
    """``--backend kernel``: refusals first (one line, exit 2), then the guest (built on first use)."""
    from ..kernel.run import check_supported, run_kernel
    from .common import fmt, stdout_console

    scenario = load_command_scenario(args)
    check_supported(scenario)
    result = run_kernel(scenario, progress=True)
    directory = result.write(args.out) if args.out else None
    print_result(result, directory)
    block = result.summary.get("kernel") or {}
    stdout_console(120).print(
        f"kernel: linux {block.get('release') or '?'}, guest {fmt(block.get('guest_wall_s'), 1)} s wall for "
        f"{fmt(block.get('virtual_duration_s'), 1)} s virtual, probe ticks skipped {block.get('probe_ticks_skipped')}; "
        "sojourn time-sampled per bin",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    return EXIT_OK
