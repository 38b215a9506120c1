"""``l4slab fidelity [--cases NAME,NAME] [--quick] [--out DIR] [--csv] [--set KEY=VALUE ...]``:
a view on the built-in study ``fidelity`` (:mod:`l4slab.fidelity`): plans and runs the panels
the cases need and prints each published quantity beside the simulated one, as the study's
report section does."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_ENGINE, EXIT_OK, add_set_argument, print_frame


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "fidelity",
        help="compare the simulator with real-kernel measurements",
        description="Run the built-in study `fidelity` (or the panels the chosen cases need): each case is a "
        "testbed measurement (DualQ paper, PAM 2025, ...) configured as its testbed ran it; prints real beside "
        "simulated with the tolerance and a verdict (`l4slab study report DIR` adds them to the study's full report). "
        "Runs already in DIR are not run again. Exit status 1 if a judged quantity is outside its tolerance.",
    )
    cmd.add_argument("--cases", metavar="NAME,NAME", help="only these cases (default: all; names in docs/fidelity.md)")
    cmd.add_argument("--quick", action="store_true", help="at most 20 s after each warm-up (a smoke test, not the judged numbers)")
    cmd.add_argument("--out", metavar="DIR", help="study directory (default results/fidelity, results/fidelity-quick)")
    cmd.add_argument("--jobs", type=int, metavar="N", help="processes (default: every core)")
    cmd.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    # Every selected panel's scenario, as `run --set`; flows[*].KEY sets KEY on each flow of a panel.
    add_set_argument(cmd, "--set flows[*].sender_rx_usecs=50 --set flows[0].cc_params.growth_gate=app_limited")


def command(args: argparse.Namespace) -> int:
    from .. import fidelity
    from ..scenario.load import parse_override
    from .common import check_out_dir

    overrides = dict(parse_override(item) for item in args.overrides)
    names = None
    if args.cases is not None:
        names = {x.strip() for x in args.cases.split(",") if x.strip()}
    if args.out:
        check_out_dir(args.out)
    table, directory = fidelity.run(
        names, quick=args.quick, out=args.out, overrides=overrides, progress=sys.stderr.isatty(), jobs=args.jobs
    )
    shown = table[["case", "cell", "quantity", "unit", "real", "simulated", "tolerance", "agrees"]].copy()
    shown["agrees"] = shown["agrees"].map({True: "yes", False: "NO", None: "–"})
    print_frame(shown, csv=args.csv)
    judged = table["agrees"].dropna()
    print(
        f"{int(judged.sum())} of {len(judged)} judged quantities agree; study {directory} "
        f"(full report: l4slab study report {directory})",
        file=sys.stderr,
    )
    return EXIT_OK if bool(judged.all()) else EXIT_ENGINE
