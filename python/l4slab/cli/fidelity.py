"""``l4slab fidelity [--cases NAME,NAME] [--quick] [--out DIR] [--csv] [--set KEY=VALUE ...]``:
the simulator against real-kernel measurements, case by case (:mod:`l4slab.fidelity`)."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_ENGINE, EXIT_OK, add_set_argument, print_frame


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "fidelity",
        help="compare the simulator with real-kernel measurements",
        description="Run the fidelity suite: each case is a testbed measurement (DualQ paper, PAM 2025, ...) "
        "configured as its testbed ran it; prints real beside simulated with the tolerance and a verdict. "
        "Exit status 1 if a judged quantity is outside its tolerance.",
    )
    cmd.add_argument("--cases", metavar="NAME,NAME", help="only these cases (default: all; names in docs/fidelity.md)")
    cmd.add_argument("--quick", action="store_true", help="shorter runs (a smoke test, not the judged numbers)")
    cmd.add_argument("--out", metavar="DIR", help="also write DIR/fidelity.csv")
    cmd.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    # Every selected case's scenario, as `run --set`; flows[*].KEY sets KEY on each flow of a case.
    add_set_argument(cmd, "--set flows[*].sender_rx_usecs=50 --set flows[0].cc_params.growth_gate=app_limited")


def command(args: argparse.Namespace) -> int:
    from .. import fidelity
    from ..errors import ScenarioError
    from ..io import write_text
    from ..scenario.load import parse_override
    from .common import check_out_dir

    overrides = dict(parse_override(item) for item in args.overrides)
    names = None
    if args.cases is not None:
        names = {x.strip() for x in args.cases.split(",") if x.strip()}
        known = list(dict.fromkeys(c.name for c in fidelity.CASES))
        unknown = sorted(names - set(known))
        if not names or unknown:
            shown = unknown[0][:40] if unknown else args.cases[:40]
            raise ScenarioError(f"--cases: no case {shown!r}; cases are {', '.join(known)}")
    if args.out:
        check_out_dir(args.out)
    table = fidelity.run_cases(names, quick=args.quick, progress=_progress_bar(), overrides=overrides)
    if args.out:
        from pathlib import Path

        write_text(Path(args.out) / "fidelity.csv", table.to_csv(index=False))
    shown = table[["case", "quantity", "unit", "real", "simulated", "tolerance", "agrees"]].copy()
    shown["agrees"] = shown["agrees"].map({True: "yes", False: "NO", None: "–"})
    print_frame(shown, csv=args.csv)
    judged = table["agrees"].dropna()
    print(f"{int(judged.sum())} of {len(judged)} judged quantities agree", file=sys.stderr)
    return EXIT_OK if bool(judged.all()) else EXIT_ENGINE


def _progress_bar():
    """A rich progress bar on stderr when it is a terminal; None otherwise."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("fidelity cases"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    task = bar.add_task("cases", total=None)

    def update(done: int, total: int, case) -> None:
        if done == 0:
            bar.start()
        bar.update(task, total=total, completed=done)
        if done == total:
            bar.stop()

    return update
