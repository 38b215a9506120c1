"""``l4slab study run|report|list|status|run-one``: studies (docs/studies.md)."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_ENGINE, EXIT_OK, check_out_dir, print_frame
from .common import error as print_error


def add_parser(commands) -> None:
    study_cmd = commands.add_parser(
        "study",
        help="run a study (a sweep of many runs) and inspect its progress",
        description="Studies: a TOML file of factors over a base scenario, run as one resumable command "
        "(docs/studies.md).",
    )
    study = study_cmd.add_subparsers(dest="study_command", required=True, metavar="SUBCOMMAND")
    run_cmd = study.add_parser("run", help="validate a study file and run every run without a result")
    run_cmd.add_argument(
        "file", metavar="FILE", help="study TOML file, or a built-in study name (e.g. pam2025-prague-cubic)"
    )
    run_cmd.add_argument("--out", metavar="DIR", help="study directory (default results/<study name>)")
    run_cmd.add_argument(
        "--executor", default="local", metavar="local|dask-local|dask://HOST:PORT",
        help="where runs execute (default local: a process pool)",
    )  # fmt: skip
    run_cmd.add_argument("--jobs", type=int, metavar="N", help="processes / Dask workers (default: every core)")
    run_cmd.add_argument(
        "--emit-jobs", metavar="FILE",
        help="run nothing: write one `l4slab study run-one DIR ID` line per pending run (SLURM arrays, GNU parallel)",
    )  # fmt: skip
    run_cmd.add_argument(
        "--panel", action="append", metavar="NAME",
        help="only this panel of a study with panels (repeat, or NAME,NAME; e.g. pam2025 --panel prague-bbr1)",
    )  # fmt: skip
    run_cmd.add_argument("--no-progress", action="store_true", help="no progress bar")
    run_cmd.add_argument(
        "--backend", choices=("sim", "emulate"), default="sim",
        help="sim: the engine (default); emulate: real kernel TCP through l4slab-emu, one run at a time, "
        "stored in DIR/emulate (never mixed with the simulated runs)",
    )  # fmt: skip
    report_cmd = study.add_parser("report", help="figures and a Markdown summary (DIR/report/report.md)")
    report_cmd.add_argument("dir", metavar="DIR", help="study directory")
    report_cmd.add_argument(
        "--published", metavar="FILE.csv",
        help="a published table (docs/studies.md 'Published tables'; `pam2025` = the shipped PAM 2025 panels) "
        "to put beside the simulated cells: heatmaps, differences, harm agreement, within 3 Mbit/s, MAE",
    )  # fmt: skip
    study.add_parser("list", help="the built-in studies")
    status_cmd = study.add_parser("status", help="done/pending/failed counts per factor value")
    status_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd = study.add_parser("run-one", help="run one planned run of a study directory (for job arrays)")
    one_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd.add_argument("run_id", metavar="RUN_ID", help="run id (a line of --emit-jobs)")
    one_cmd.add_argument("--force", action="store_true", help="run even if a valid result exists")


def _require_done_run(directory: str) -> None:
    """``study report`` needs at least one finished run: say so on one line (exit 2)."""
    from .. import study
    from ..errors import ScenarioError

    runs = study.load(directory).runs
    if not (runs["status"] == "done").any():
        raise ScenarioError(
            f"{directory}: no finished run to report yet ({len(runs)} planned); run `l4slab study run FILE --out DIR`"
        )


def command(args: argparse.Namespace) -> int:
    from .. import study

    if args.study_command == "run":
        panels = [name.strip() for arg in (args.panel or []) for name in arg.split(",") if name.strip()] or None
        if args.out is not None:
            check_out_dir(args.out)
        if args.emit_jobs is not None and args.backend != "sim":
            from ..errors import ScenarioError

            raise ScenarioError("--emit-jobs: emulated runs cannot be handed to a job array; run them with study run")
        if args.emit_jobs is not None:
            directory, count = study.emit_jobs(args.file, args.emit_jobs, out=args.out, panels=panels)
            print(f"wrote {count} job line(s) to {args.emit_jobs} (study directory {directory})")
            return EXIT_OK
        report = study.run(
            args.file,
            out=args.out,
            executor=args.executor,
            jobs=args.jobs,
            progress=not args.no_progress and sys.stderr.isatty(),
            panels=panels,
            backend=args.backend,
        )
        print(
            f"{report.directory}: {report.total} runs: {report.skipped} already done, {report.done} run now, "
            f"{report.failed} failed; catalog {report.directory}/catalog.duckdb"
        )
        for rid, message in list(report.errors.items())[:5]:
            print_error(f"run {rid[:12]}: {message}")
        return EXIT_ENGINE if report.failed else EXIT_OK
    if args.study_command == "report":
        from ..study.report import report as write_report

        _require_done_run(args.dir)
        print(f"wrote {write_report(args.dir, published=args.published)}")
        return EXIT_OK
    if args.study_command == "list":
        for name in study.builtin_studies():
            print(name)
        return EXIT_OK
    if args.study_command == "status":
        frame = study.status(args.dir)
        print_frame(frame, csv=False)
        return EXIT_OK
    message = study.run_one(args.dir, args.run_id, force=args.force)
    if message is not None:
        print_error(f"run {args.run_id[:12]}: {message}")
        return EXIT_ENGINE
    return EXIT_OK
