"""``l4slab demo --out DIR [--duration 20s] [--jobs N]``: the built-in ``demo`` study, then its report.

A shortcut for ``l4slab study run demo --out DIR`` (with the base scenario's duration
replaced) followed by ``l4slab study report DIR``: CUBIC vs Reno over bfifo at 0.5, 1,
2 and 4 BDP, run in parallel, written to ``DIR/report/report.md``.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ScenarioError
from .common import EXIT_ENGINE, EXIT_OK, check_out_dir, error

#: The built-in study the demo runs.
DEMO_STUDY = "demo"


def add_parser(commands) -> None:
    demo_cmd = commands.add_parser(
        "demo",
        help="run the demo study and write its report",
        description="CUBIC vs Reno over bfifo at 0.5/1/2/4 BDP (the built-in study 'demo'), run in parallel; "
        "writes the study directory and DIR/report/report.md.",
    )
    demo_cmd.add_argument("--out", metavar="DIR", required=True, help="study directory")
    demo_cmd.add_argument("--duration", default="20s", metavar="TIME", help="simulated time per run (default 20s)")
    demo_cmd.add_argument("--jobs", type=int, metavar="N", help="parallel processes (default: number of CPUs)")


def command(args: argparse.Namespace) -> int:
    from .. import study
    from ..study.report import report as write_report
    from ..units import parse_time

    check_out_dir(args.out)
    parse_time(args.duration, "--duration")
    if args.jobs is not None and args.jobs < 1:
        raise ScenarioError(f"--jobs: {args.jobs} is not a positive number of processes; expected e.g. 2")
    outcome = study.run(
        DEMO_STUDY,
        out=args.out,
        jobs=args.jobs,
        progress=sys.stderr.isatty(),
        overrides={"duration": args.duration},
    )
    for rid, message in list(outcome.errors.items())[:5]:
        error(f"run {rid[:12]}: {message}")
    if outcome.failed:
        return EXIT_ENGINE
    markdown = write_report(outcome.directory)
    print(f"wrote {markdown}")
    # The last line names the page to open: one file, every figure inline.
    print(f"open {markdown.with_suffix('.html')} in a browser")
    return EXIT_OK
