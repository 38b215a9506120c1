"""``l4slab export (--flent | --iperf3-json) RUN_DIR [--output PATH]``: a run directory in
the formats of flent and iperf3 (see :mod:`l4slab.export`)."""

from __future__ import annotations

import argparse

from .common import EXIT_OK


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "export",
        help="a run directory as flent data or iperf3 JSON",
        description="Write RUN_DIR (from `l4slab run --out`) as a .flent.gz that flent loads and plots "
        "(flent -i FILE -p all_scaled), or as one iperf3 -J style JSON per TCP flow.",
    )
    what = cmd.add_mutually_exclusive_group(required=True)
    what.add_argument("--flent", action="store_true", help="write RUN_DIR/<name>.flent.gz (needs PyPI flent)")
    what.add_argument("--iperf3-json", action="store_true", help="write RUN_DIR/iperf3-flow<N>.json per TCP flow")
    cmd.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by `l4slab run --out`")
    cmd.add_argument("--output", "-o", metavar="PATH", help="the .flent.gz file, or the directory for the iperf3 files")


def command(args: argparse.Namespace) -> int:
    from .. import export
    from .common import check_out_dir

    if args.flent:
        if args.output is not None:
            # The file's directory must be one we can write, checked before reading the run.
            from pathlib import Path

            check_out_dir(Path(args.output).parent, "--output")
        print(export.to_flent(args.run_dir, args.output))
    else:
        if args.output is not None:
            check_out_dir(args.output, "--output")
        for path in export.to_iperf3_json(args.run_dir, args.output):
            print(path)
    return EXIT_OK
