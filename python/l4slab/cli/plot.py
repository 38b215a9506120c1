"""``l4slab plot RUN [RUN ...] [--out DIR] [--format png,svg]``: a run's flent-style figures
(goodput, cwnd, sRTT, sojourn per queue, marks/drops, sojourn CCDF) and its ``run.html``; with
several runs, the runs overlaid (flent's ``-i a -i b``) into ``--out`` with ``overlay.html``.
A run is a run directory or a study's run (``STUDY_DIR/runs/<id>[.parquet]``, an id prefix)."""

from __future__ import annotations

import argparse

from ..errors import ScenarioError
from .common import EXIT_OK, check_out_dir

FORMATS = ("png", "svg")


def add_parser(commands) -> None:
    plot_cmd = commands.add_parser(
        "plot",
        help="draw a run's figures and its run.html; several runs overlaid",
        description="Flent-style figures of a run: goodput, cwnd and sRTT per flow, sojourn per qdisc queue, "
        "marks and drops, sojourn CCDF; written to RUN_DIR/plots (or --out) and embedded in RUN_DIR/run.html. "
        "A run is a run directory (the --out of `l4slab run`) or any run of a study, STUDY_DIR/runs/<id> "
        "(a unique id prefix will do; figures in STUDY_DIR/plots/<id>). Several runs are overlaid, one line "
        "per run and flow, as flent -i a -i b does: --out DIR is then required and gets overlay.html.",
    )
    plot_cmd.add_argument("run_dir", metavar="RUN", nargs="+", help="a run directory, or STUDY_DIR/runs/<id>")
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
    from ..analysis.runplots import plot_run, plot_runs

    if len(args.run_dir) > 1:
        if not args.out:
            raise ScenarioError(f"--out: required to overlay {len(args.run_dir)} runs; expected a directory")
        written, page = plot_runs(args.run_dir, args.out, formats)
    else:
        written, page = plot_run(args.run_dir[0], args.out, formats)
    print(f"wrote {len(written)} figure(s) to {written[0].parent} and {page}")
    return EXIT_OK
