"""``l4slab study run|report|list|status|run-one``: studies (docs/studies.md)."""

from __future__ import annotations

import argparse
import re
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
        "--replace", action="store_true",
        help="--out holds another study: delete its results and run this one there (else refused)",
    )  # fmt: skip
    run_cmd.add_argument(
        "--backend", choices=("sim", "emulate", "kernel"), default="sim",
        help="sim: the engine (default); emulate: real kernel TCP through l4slab-emu, one run at a time, "
        "stored in DIR/emulate (never mixed with the simulated runs); kernel: each run on a real Linux kernel "
        "in a virtual-time UML guest, one guest per worker (--jobs), stored in DIR/kernel",
    )  # fmt: skip
    _add_max_memory(run_cmd)
    report_cmd = study.add_parser("report", help="figures and a Markdown summary (DIR/report/report.md)")
    report_cmd.add_argument("dir", metavar="DIR", help="study directory")
    report_cmd.add_argument(
        "--published", metavar="FILE.csv",
        help="a published table (docs/studies.md 'Published tables'; `pam2025` = the shipped PAM 2025 panels) "
        "to put beside the simulated cells: heatmaps, differences, harm agreement, within 3 Mbit/s, MAE",
    )  # fmt: skip
    study.add_parser("list", help="the built-in studies")
    show_cmd = study.add_parser(
        "show",
        help="a study's description, factors, run count, estimated time and source, as a study file to copy",
        description="Print a study file (a built-in study by name, or a file) headed by comments: what it "
        "reproduces, its factors and levels, points and runs, an estimated run time and whether published data "
        "come with it. The output is itself a valid study file: `l4slab study show NAME > my.toml`, edit, "
        "`l4slab study run my.toml`.",
    )
    show_cmd.add_argument("file", metavar="NAME|FILE", help="a built-in study name (l4slab study list) or a study file")
    status_cmd = study.add_parser("status", help="done/pending/failed counts per factor value")
    status_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd = study.add_parser("run-one", help="run one planned run of a study directory (for job arrays)")
    one_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd.add_argument("run_id", metavar="RUN_ID", help="run id (a line of --emit-jobs)")
    one_cmd.add_argument("--force", action="store_true", help="run even if a valid result exists")
    _add_max_memory(one_cmd)


def _add_max_memory(cmd) -> None:
    cmd.add_argument(
        "--max-memory", metavar="SIZE",
        help="refuse, before running, runs whose memory estimates exceed SIZE (e.g. 8GB, 512MiB): the runs that "
        "run at once (--jobs) together; default: the memory available now (docs/reference.md, limits)",
    )  # fmt: skip


def _max_memory(args: argparse.Namespace) -> int | None:
    from ..memory import parse_size

    return None if args.max_memory is None else parse_size(args.max_memory)


def _require_done_run(directory: str) -> None:
    """``study report`` needs at least one finished run: say so on one line (exit 2)."""
    from .. import study
    from ..errors import ScenarioError

    runs = study.load(directory).current().runs
    if not (runs["status"] == "done").any():
        raise ScenarioError(
            f"{directory}: no finished run to report yet ({len(runs)} planned); run `l4slab study run FILE --out DIR`"
        )


def command(args: argparse.Namespace) -> int:
    from .. import study

    if args.study_command == "run":
        panels = [name.strip() for arg in (args.panel or []) for name in arg.split(",") if name.strip()] or None
        max_memory = _max_memory(args)
        if args.out is not None:
            check_out_dir(args.out)
        if args.emit_jobs is not None and args.backend != "sim":
            from ..errors import ScenarioError

            raise ScenarioError(
                f"--emit-jobs: {args.backend} runs cannot be handed to a job array; run them with study run"
            )
        if args.emit_jobs is not None:
            directory, count = study.emit_jobs(
                args.file, args.emit_jobs, out=args.out, panels=panels, replace=args.replace
            )
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
            replace=args.replace,
            max_memory=max_memory,
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
    if args.study_command == "show":
        sys.stdout.write(show_text(args.file))
        return EXIT_OK
    if args.study_command == "list":
        for name in study.builtin_studies():
            print(name)
        return EXIT_OK
    if args.study_command == "status":
        frame = study.status(args.dir)
        print_frame(frame, csv=False)
        return EXIT_OK
    message = study.run_one(args.dir, args.run_id, force=args.force, max_memory=_max_memory(args))
    if message is not None:
        print_error(f"run {args.run_id[:12]}: {message}")
        return EXIT_ENGINE
    return EXIT_OK


#: Engine speed assumed by ``study show``'s estimate: packets per second on one core of a quiet
#: machine (the order of ``l4slab bench``'s CUBIC reference, counting data and ACK packets),
#: plus a fixed cost per run (process start, the run file and its checksum).
ESTIMATE_PACKETS_PER_S = 2.5e6
ESTIMATE_RUN_OVERHEAD_S = 0.1
#: Data packets of a full-size frame (1514 B on the wire) and ACKs per data packet (delayed ACK).
FRAME_BITS = 1514 * 8
ACKS_PER_PACKET = 0.5


def _estimate_packets(config: dict) -> float:
    """Packets one run handles: the bottleneck at its rate for the run (data + ACKs), plus what
    unresponsive sources offer above it (dropped at the queue, still events)."""
    duration_s = config.get("duration_ns", 0) / 1e9
    rate = float(config.get("bottleneck", {}).get("rate_bps", 0))
    offered = sum(float(f.get("rate_bps", 0)) for f in config.get("flows", []) if f.get("kind") == "udp")
    offered += sum(float(s.get("rate_bps", 0)) for s in config.get("sources", []) if s.get("kind") == "syn_flood")
    return duration_s * (rate * (1 + ACKS_PER_PACKET) + max(0.0, offered - rate)) / FRAME_BITS


def _comment_block(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(line for line in lines if line)


def _published(name: str | None) -> str:
    """What published data come with a built-in study: its data files, and numbers stated in
    the paper's text that its report.py draws beside the simulated ones."""
    if name is None:
        return "none (not a built-in study)"
    from ..study import registry

    folder = registry.study_dir(name)
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix in (".csv", ".json", ".parquet"))
    report = folder / "report.py"
    source = report.read_text(encoding="utf-8") if report.is_file() else ""
    # A file its report.py names is read by the study's own report section.
    own = [f for f in files if f in source]
    others = [f for f in files if f not in source]
    found = [f"{', '.join(own)} (its report judges the runs against them)"] if own else []
    found += [f"{', '.join(others)} (`study report --published`)"] if others else []
    if "load_published(" in source and not files:
        found.append("the PAM 2025 published tables (pam2025/pam2025_published.csv), beside the simulated cells")
    if re.search(r"(?m)^PUBLISHED\w* = ", source):
        found.append("numbers stated in the paper's text, drawn beside the simulated ones by its report sections")
    return "; ".join(found) or "none: the report shows the simulation alone"


def _value(value) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 70 else text[:67] + "..."


def show_text(path: str) -> str:
    """``study show``: the study file (built-in by name, or a path) headed by comment lines."""
    import textwrap
    from pathlib import Path

    from ..errors import ScenarioError
    from ..scenario.load import tomllib
    from ..study import registry
    from ..study.spec import outline_study

    if not Path(path).exists() and path not in registry.builtin_studies():
        raise ScenarioError(
            f"{path!r} is neither a built-in study ({', '.join(registry.builtin_studies())}) nor a study file"
        )
    spec = outline_study(path)
    runs = spec.points * spec.trials
    file = registry.resolve_builtin(path)
    builtin = path if file != Path(path) else None
    text = file.read_text(encoding="utf-8")
    meta = tomllib.loads(text).get("study", {})
    description = meta.get("description")
    if not description:  # the file's opening comments follow in full: their first sentence here
        comments = _comment_block(text)
        description = (comments.split(". ")[0] + ("." if ". " in comments else "")) if comments else "(none)"
    packets = sum(_estimate_packets(config) * points * spec.trials for config, points in spec.scenarios)
    seconds = packets / ESTIMATE_PACKETS_PER_S + ESTIMATE_RUN_OVERHEAD_S * runs
    head = [f"l4slab study show {path}: copy it (`l4slab study show {path} > my.toml`), edit, `l4slab study run "
            "my.toml`.", f"reproduces: {meta.get('reproduces') or 'not stated'}"]  # fmt: skip
    head += textwrap.wrap("description: " + " ".join(description.split()), 96, subsequent_indent="  ")
    head.append("factors and their levels:")
    for factor in spec.factors:
        levels = ", ".join(_value(v) for v in factor.values)
        head += textwrap.wrap(f"{factor.path} ({len(factor.values)}): {levels}", 96, initial_indent="  ",
                              subsequent_indent="      ")  # fmt: skip
    head.append(f"points: {spec.points} x {spec.trials} trial(s) = {runs} runs")
    measured = _measured(builtin, runs) if builtin else None
    if measured:
        head += textwrap.wrap(measured, 96, subsequent_indent="  ")
    head.append(
        f"estimated time: about {_duration(seconds)} on one core, {_duration(seconds / 2)} with --jobs 2 "
        f"({packets / 1e6:.0f} M packets at {ESTIMATE_PACKETS_PER_S / 1e6:g} M packets/s, "
        f"+ {ESTIMATE_RUN_OVERHEAD_S:g} s per run; a loaded machine is slower)"
    )
    head.append(f"published data: {_published(builtin)}")
    return "".join(f"# {line}\n" for line in head) + "#\n" + text


def _measured(name: str, runs: int) -> str | None:
    """The built-in study's wall time as measured (``studies/wall_times.toml``, the table of
    docs/studies.md), when its run count is still the one measured."""
    from ..scenario.load import tomllib
    from ..study import registry

    file = registry._root() / "wall_times.toml"
    if not file.is_file():
        return None
    entry = tomllib.loads(file.read_text(encoding="utf-8")).get(name)
    if not entry or int(entry.get("runs", -1)) != runs:
        return None
    how = entry.get("how", "measured")
    return (
        f"measured time: {_duration(float(entry['seconds']))} with --jobs {entry['jobs']} ({how}; "
        f"{entry['machine']}, load average {entry['load']}, {entry['date']}; docs/studies.md)"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
