"""``l4slab plot RUN_DIR [--out DIR] [--format png,svg]``: a run directory's flent-style figures
(goodput, cwnd, sRTT, sojourn per queue, marks/drops, sojourn CCDF) and ``RUN_DIR/run.html``."""

from __future__ import annotations

import argparse

from ..errors import ScenarioError
from .common import EXIT_OK, check_out_dir

FORMATS = ("png", "svg")


def add_parser(commands) -> None:
    plot_cmd = commands.add_parser(
        "plot",
        help="draw a run directory's figures and its run.html",
        description="Flent-style figures of one run directory (the --out of `l4slab run`): goodput, cwnd and "
        "sRTT per flow, sojourn per qdisc queue, marks and drops, sojourn CCDF; written to RUN_DIR/plots "
        "(or --out) and embedded in RUN_DIR/run.html.",
    )
    plot_cmd.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (with summary.json)")
    plot_cmd.add_argument("--out", metavar="DIR", help="where the figures go (default RUN_DIR/plots)")
    plot_cmd.add_argument(
        "--format", default="png,svg", metavar="png,svg", help="figure formats, comma-separated (default png,svg)"
    )


def command(args: argparse.Namespace) -> int:
    formats = tuple(f.strip().lower() for f in args.format.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ScenarioError(f"--format: {args.format!r} is not a list of {', '.join(FORMATS)}; expected e.g. png,svg")
    if args.out:
        check_out_dir(args.out)
    from ..analysis.runplots import plot_run

    written, page = plot_run(args.run_dir, args.out, formats)
    print(f"wrote {len(written)} figure(s) to {written[0].parent} and {page}")
    return EXIT_OK
