"""``l4slab run SCENARIO [--out DIR] [--seed N] [--set KEY=VALUE ...]``: one run, a summary table,
the ``tc -s``-like qdisc block and (with ``--out``) the run directory.

``--out`` is checked before the run (exit 2 for a file or an unwritable place) and the
run directory is written before anything is printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, add_set_argument, check_out_dir
from .runtable import print_result


def add_parser(commands) -> None:
    run_cmd = commands.add_parser(
        "run",
        help="run one scenario",
        description="Run one scenario, print a summary table and (with --out) write the output files.",
    )
    run_cmd.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    run_cmd.add_argument("--out", metavar="DIR", help="write summary.json, scenario.json and Parquet series here")
    run_cmd.add_argument("--seed", type=int, metavar="N", help="replace the scenario's seed")
    add_set_argument(run_cmd, "--set bottleneck.rate=50Mbit --set flows[0].cc=reno")
    run_cmd.add_argument(
        "--backend",
        choices=("sim", "emulate"),
        default="sim",
        help="sim: the engine (default); emulate: real kernel TCP through the emulator (as `l4slab emulate`)",
    )


def command(args: argparse.Namespace) -> int:
    from ..runner import run
    from ..scenario import load_scenario, parse_override

    if getattr(args, "backend", "sim") == "emulate":
        from . import emulate

        return emulate.command(args)
    if args.out is not None:
        check_out_dir(args.out)
    overrides = dict(parse_override(item) for item in args.overrides)
    if args.seed is not None:
        overrides["seed"] = args.seed
    result = run(load_scenario(Path(args.scenario), overrides=overrides))
    # Results first: the run directory exists even if printing fails (`| head -1`).
    directory = result.write(args.out) if args.out else None
    print_result(result, directory)
    return EXIT_OK
