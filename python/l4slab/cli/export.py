"""``l4slab export (--flent | --iperf3-json | --NAME) RUN_DIR [--output PATH]``: a run
directory in the formats of flent and iperf3 (see :mod:`l4slab.export`), or any format
registered in :mod:`l4slab.exporters`."""

from __future__ import annotations

import argparse

from .. import exporters
from .common import EXIT_OK


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "export",
        help="a run directory as flent data or iperf3 JSON",
        description="Write RUN_DIR (from `l4slab run --out`) as a .flent.gz that flent loads and plots "
        "(flent -i FILE -p all_scaled), or as one iperf3 -J style JSON per TCP flow.",
    )
    what = cmd.add_mutually_exclusive_group(required=True)
    # One flag per registered format (l4slab.exporters), found there by name.
    for e in exporters.EXPORTERS.values():
        what.add_argument(f"--{e.name}", dest="format", action="store_const", const=e.name, help=e.help)
    cmd.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by `l4slab run --out`")
    cmd.add_argument("--output", "-o", metavar="PATH", help="the .flent.gz file, or the directory for the iperf3 files")


def command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .common import check_out_dir

    e = exporters.exporter(args.format)
    if args.output is not None:
        # The output's directory must be one we can write, checked before reading the run.
        check_out_dir(args.output if e.output_is_dir else Path(args.output).parent, "--output")
    for path in e.write(args.run_dir, args.output):
        print(path)
    return EXIT_OK
