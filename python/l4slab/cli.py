"""The ``l4slab`` command.

    l4slab run SCENARIO [--out DIR] [--seed N] [--set KEY=VALUE ...]
    l4slab bench [--json] [--scenario FILE] [--repeat N] [--duration TIME] [--qdisc all|KIND,...]
    l4slab demo --out DIR [--duration 20s] [--jobs N]
    l4slab study run FILE [--out DIR] [--executor local|dask-local|dask://HOST:PORT] [--jobs N] [--emit-jobs FILE]
    l4slab study status DIR
    l4slab study run-one DIR RUN_ID
    l4slab query DIR "SQL" [--csv]

User mistakes (an invalid scenario, a missing file) print one line
``l4slab: error: ...`` on stderr and exit with status 2; engine failures exit 1.
No traceback is ever printed for either.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from contextlib import ExitStack
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .errors import EngineError, EngineUnavailableError, ScenarioError

EXIT_OK = 0
EXIT_ENGINE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: ``bench --qdisc``: each qdisc at the PAM 2025 study's configuration for a 2-BDP
#: buffer (aqm.md §0; 250000 B / 167 packets at 100 Mbit/s × 10 ms).
BENCH_QDISCS = {
    "bfifo": "bfifo limit 2bdp",
    "fq": "fq limit 2bdp flow_limit 2bdp orphan_mask 0 ce_threshold 5ms",
    "pie": "pie limit 2bdp target 5ms",
    "codel": "codel limit 2bdp target 5ms ecn",
    "fq_codel": "fq_codel limit 2bdp target 5ms ecn",
    "dualpi2": "dualpi2 target 5ms",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="l4slab",
        description="Packet-level L4S network simulator: TOML scenarios in, summary.json and Parquet out.",
    )
    parser.add_argument("--version", action="version", version=f"l4slab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run_cmd = commands.add_parser(
        "run",
        help="run one scenario",
        description="Run one scenario, print a summary table and (with --out) write the output files.",
    )
    run_cmd.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    run_cmd.add_argument("--out", metavar="DIR", help="write summary.json, scenario.json and Parquet series here")
    run_cmd.add_argument("--seed", type=int, metavar="N", help="replace the scenario's seed")
    run_cmd.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field, e.g. --set bottleneck.rate=50Mbit --set flows[0].cc=reno (repeatable)",
    )

    bench_cmd = commands.add_parser(
        "bench",
        help="measure engine speed on the reference scenario",
        description="Run a scenario (default: the packaged reference) and report the engine's wall time "
        "and simulated packets per wall-clock second, data packets and ACKs separately.",
    )
    bench_cmd.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    bench_cmd.add_argument("--scenario", metavar="FILE", help="scenario to run instead of the reference")
    bench_cmd.add_argument(
        "--repeat", type=int, default=3, metavar="N", help="runs to time (default 3; best is reported)"
    )
    bench_cmd.add_argument(
        "--duration", metavar="TIME", help="simulated time per run instead of the scenario's, e.g. 10s"
    )
    bench_cmd.add_argument(
        "--qdisc",
        metavar="all|KIND,...",
        help="run the scenario once per qdisc at its PAM 2025 configuration for 2 BDP "
        f"({', '.join(BENCH_QDISCS)}) and print a table; --json prints a JSON list",
    )

    demo_cmd = commands.add_parser(
        "demo",
        help="run a small demo study and write a report",
        description="CUBIC vs Reno over bfifo at 0.5/1/2/4 BDP, run in parallel; writes each run and report.md.",
    )
    demo_cmd.add_argument("--out", metavar="DIR", required=True, help="output directory")
    demo_cmd.add_argument("--duration", default="20s", metavar="TIME", help="simulated time per run (default 20s)")
    demo_cmd.add_argument("--jobs", type=int, metavar="N", help="parallel processes (default: number of CPUs)")
    _study_parsers(commands)
    return parser


def _study_parsers(commands) -> None:
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
    run_cmd.add_argument("--no-progress", action="store_true", help="no progress bar")
    report_cmd = study.add_parser("report", help="figures and a Markdown summary (DIR/report/report.md)")
    report_cmd.add_argument("dir", metavar="DIR", help="study directory")
    study.add_parser("list", help="the built-in studies")
    status_cmd = study.add_parser("status", help="done/pending/failed counts per factor value")
    status_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd = study.add_parser("run-one", help="run one planned run of a study directory (for job arrays)")
    one_cmd.add_argument("dir", metavar="DIR", help="study directory")
    one_cmd.add_argument("run_id", metavar="RUN_ID", help="run id (a line of --emit-jobs)")
    one_cmd.add_argument("--force", action="store_true", help="run even if a valid result exists")

    query_cmd = commands.add_parser(
        "query",
        help="SQL over a study's DuckDB catalog",
        description="Run SQL over DIR/catalog.duckdb: tables runs, flows, bottleneck, classes, summaries; "
        "views flow_series, bottleneck_series.",
    )
    query_cmd.add_argument("dir", metavar="DIR", help="study directory")
    query_cmd.add_argument("sql", metavar="SQL", help="e.g. \"SELECT * FROM summaries WHERE metric = 'goodput_mbps'\"")
    query_cmd.add_argument("--csv", action="store_true", help="print CSV instead of a table")


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


# --- run ----------------------------------------------------------------------------------------


def _command_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .runner import run, tc_stats_lines
    from .scenario import load_scenario, parse_override

    overrides = dict(parse_override(item) for item in args.overrides)
    if args.seed is not None:
        overrides["seed"] = args.seed
    result = run(load_scenario(Path(args.scenario), overrides=overrides))
    summary = result.summary
    console = Console(width=None if sys.stdout.isatty() else 120)

    bottleneck = summary["bottleneck"]
    title = (
        f"{summary['scenario']}: {summary['duration_s']:g} s, seed {summary['seed']}, "
        f"htb {bottleneck['rate_mbps']:g}Mbit + {bottleneck['qdisc_config']}"
    )
    table = Table(title=title, title_justify="left")
    show_labels = any(flow.get("label") not in (None, flow["cc"]) for flow in summary["flows"])
    headers = ["flow", *(["label"] if show_labels else []), "cc", "base RTT ms", "goodput Mb/s", "mean srtt ms"]
    headers += ["queuing ms", "retrans", "drops", "marks"]
    for header in headers:
        table.add_column(header, justify="left" if header in ("label", "cc") else "right")
    for flow in summary["flows"]:
        table.add_row(
            str(flow["id"]),
            *([str(flow.get("label"))] if show_labels else []),
            str(flow["cc"]),
            _fmt(flow.get("base_rtt_ms")),
            _fmt(flow["goodput_mbps"], 2),
            _fmt(flow["mean_srtt_ms"]),
            _fmt(flow["queuing_delay_ms"]),
            _fmt(flow["retransmits"]),
            _fmt(flow.get("drops")),
            _fmt(flow.get("marks")),
        )
    console.print(table)
    sojourn = bottleneck["sojourn_ms"]
    console.print(
        f"bottleneck: utilisation {_fmt(bottleneck['utilisation'], 3)}, sojourn mean/p50/p99 "
        f"{_fmt(sojourn.get('mean'))}/{_fmt(sojourn.get('p50'))}/{_fmt(sojourn.get('p99'))} ms, "
        f"drops {bottleneck['drops']}, marks {bottleneck['marks']}; Jain index {_fmt(summary['jain_index'], 3)}",
        soft_wrap=True,
    )
    for line in tc_stats_lines(bottleneck):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    console.print(
        f"packets: {summary['packets_sent']} sent = {summary['packets_delivered']} delivered + "
        f"{summary['packets_dropped']} dropped + {summary['packets_in_flight']} in flight; "
        f"engine {result.wall_s:.3f} s wall",
        soft_wrap=True,
    )
    if args.out:
        directory = result.write(args.out)
        console.print(f"wrote {directory}/summary.json and series (see docs/outputs.md)", soft_wrap=True)
    return EXIT_OK


# --- bench ----------------------------------------------------------------------------------------


def _bench_scenario(args: argparse.Namespace):
    """The scenario to time: ``--scenario`` or the packaged reference, with ``--duration``."""
    from .scenario import load_scenario
    from .units import parse_time

    if args.repeat < 1:
        raise ScenarioError(f"--repeat: {args.repeat} is not a positive number of runs; expected e.g. 3")
    duration = parse_time(args.duration, "--duration") if args.duration is not None else None
    with ExitStack() as stack:
        if args.scenario:
            path = Path(args.scenario)
        else:
            reference = resources.files("l4slab").joinpath("scenarios", "reference.toml")
            path = stack.enter_context(resources.as_file(reference))
        scenario = load_scenario(path)
    if duration is not None:
        scenario = scenario.model_copy(update={"duration": duration})
        scenario.check()
    return scenario


def _time_config(config: dict[str, Any], repeat: int) -> tuple[dict[str, Any], list[float]]:
    from .runner import simulate_config

    walls: list[float] = []
    results: dict[str, Any] = {}
    for _ in range(repeat):
        results, wall_s = simulate_config(config)
        walls.append(wall_s)
    return results, walls


def _command_bench(args: argparse.Namespace) -> int:
    from .runner import engine_version

    scenario = _bench_scenario(args)
    if args.qdisc is not None:
        return _bench_qdiscs(args, scenario)
    config = scenario.resolve()

    results, walls = _time_config(config, args.repeat)
    best = min(walls)
    packets = results["packets"]
    report = {
        "scenario": scenario.name,
        "simulated_s": results["duration_s"],
        "flows": len(results["flows"]),
        "repeat": args.repeat,
        "wall_s": best,
        "wall_s_median": statistics.median(walls),
        "wall_s_all": walls,
        "packets": packets["sent"],
        "data_packets": packets.get("data"),
        "ack_packets": packets.get("acks"),
        "packets_per_s": packets["sent"] / best if best > 0 else None,
        "data_packets_per_s": packets["data"] / best if best > 0 and "data" in packets else None,
        "ack_packets_per_s": packets["acks"] / best if best > 0 and "acks" in packets else None,
        "events": results.get("events"),
        "events_per_s": results["events"] / best if best > 0 and "events" in results else None,
        "speedup": results["duration_s"] / best if best > 0 else None,
        "engine_version": engine_version(),
    }
    if args.json:
        print(json.dumps(report))
        return EXIT_OK

    def rate(value: float | None) -> str:
        return "–" if value is None else f"{value / 1e6:.2f} M/s"

    print(f"scenario:  {report['scenario']} ({report['simulated_s']:g} s simulated, {report['flows']} flows)")
    print(
        f"wall:      {best:.3f} s best of {args.repeat} (median {report['wall_s_median']:.3f} s); "
        f"{report['speedup']:.0f}x faster than real time"
    )
    print(f"packets:   {report['packets']} = {report['data_packets']} data + {report['ack_packets']} ACKs")
    print(
        f"packets/s: {rate(report['packets_per_s'])} "
        f"(data {rate(report['data_packets_per_s'])}, ACKs {rate(report['ack_packets_per_s'])})"
    )
    if report["events"] is not None:
        print(f"events/s:  {rate(report['events_per_s'])} ({report['events']} events)")
    print(f"engine:    {report['engine_version']}")
    return EXIT_OK


def _bench_kinds(selection: str) -> list[str]:
    if selection.strip() == "all":
        return list(BENCH_QDISCS)
    kinds = [kind.strip() for kind in selection.split(",") if kind.strip()]
    for kind in kinds:
        if kind not in BENCH_QDISCS:
            raise ScenarioError(f"--qdisc: {kind!r} is not one of all, {', '.join(BENCH_QDISCS)}")
    if not kinds:
        raise ScenarioError(f"--qdisc: empty; expected all or some of {', '.join(BENCH_QDISCS)}")
    return list(dict.fromkeys(kinds))


def _bench_qdiscs(args: argparse.Namespace, scenario) -> int:
    """``bench --qdisc``: the scenario once per qdisc at its PAM configuration; a table or a JSON list."""
    from .qdisc import describe_engine_qdisc, parse_qdisc
    from .runner import engine_version

    version = engine_version()
    rows: list[dict[str, Any]] = []
    for kind in _bench_kinds(args.qdisc):
        bottleneck = scenario.bottleneck.model_copy(update={"qdisc": parse_qdisc(BENCH_QDISCS[kind]), "buffer": None})
        config = scenario.model_copy(update={"bottleneck": bottleneck}).resolve()
        results, walls = _time_config(config, args.repeat)
        best = min(walls)
        packets = results["packets"]["sent"]
        rows.append(
            {
                "qdisc": kind,
                "config": describe_engine_qdisc(config["bottleneck"]["qdisc"]),
                "scenario": scenario.name,
                "simulated_s": results["duration_s"],
                "repeat": args.repeat,
                "wall_s": best,
                "wall_s_median": statistics.median(walls),
                "packets": packets,
                "packets_per_s": packets / best if best > 0 else None,
                "events_per_s": results["events"] / best if best > 0 and "events" in results else None,
                "speedup": results["duration_s"] / best if best > 0 else None,
                "engine_version": version,
            }
        )
    baseline = next((row["packets_per_s"] for row in rows if row["qdisc"] == "bfifo"), None)
    for row in rows:
        pps = row["packets_per_s"]
        row["speed_vs_bfifo"] = pps / baseline if baseline and pps is not None else None
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK

    simulated = rows[0]["simulated_s"] if rows else 0
    print(f"scenario: {scenario.name} ({simulated:g} s simulated), best of {args.repeat}; engine {version}")
    header = f"{'qdisc':<9} {'wall s':>8} {'packets/s':>11} {'vs bfifo':>9}  config"
    print(header)
    print("-" * len(header))
    for row in rows:
        pps = "–" if row["packets_per_s"] is None else f"{row['packets_per_s'] / 1e6:.2f} M"
        relative = "–" if row["speed_vs_bfifo"] is None else f"{row['speed_vs_bfifo']:.2f}x"
        print(f"{row['qdisc']:<9} {row['wall_s']:>8.3f} {pps:>11} {relative:>9}  {row['config']}")
    return EXIT_OK


# --- demo ----------------------------------------------------------------------------------------


def _command_demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .demo import run_demo
    from .units import parse_time

    parse_time(args.duration, "--duration")
    if args.jobs is not None and args.jobs < 1:
        raise ScenarioError(f"--jobs: {args.jobs} is not a positive number of processes; expected e.g. 2")
    console = Console(stderr=True)
    report = run_demo(args.out, duration=args.duration, jobs=args.jobs, console=console)
    print(f"wrote {report}")
    return EXIT_OK


# --- study / query --------------------------------------------------------------------------------


def _command_study(args: argparse.Namespace) -> int:
    from . import study

    if args.study_command == "run":
        if args.emit_jobs:
            directory, count = study.emit_jobs(args.file, args.emit_jobs, out=args.out)
            print(f"wrote {count} job line(s) to {args.emit_jobs} (study directory {directory})")
            return EXIT_OK
        report = study.run(
            args.file,
            out=args.out,
            executor=args.executor,
            jobs=args.jobs,
            progress=not args.no_progress and sys.stderr.isatty(),
        )
        print(
            f"{report.directory}: {report.total} runs: {report.skipped} already done, {report.done} run now, "
            f"{report.failed} failed; catalog {report.directory}/catalog.duckdb"
        )
        for rid, error in list(report.errors.items())[:5]:
            _error(f"run {rid[:12]}: {error}")
        return EXIT_ENGINE if report.failed else EXIT_OK
    if args.study_command == "report":
        from .study.report import report as write_report

        print(f"wrote {write_report(args.dir)}")
        return EXIT_OK
    if args.study_command == "list":
        for name in study.builtin_studies():
            print(name)
        return EXIT_OK
    if args.study_command == "status":
        frame = study.status(args.dir)
        _print_frame(frame, csv=False)
        return EXIT_OK
    error = study.run_one(args.dir, args.run_id, force=args.force)
    if error is not None:
        _error(f"run {args.run_id[:12]}: {error}")
        return EXIT_ENGINE
    return EXIT_OK


def _print_frame(frame, *, csv: bool) -> None:
    if csv:
        sys.stdout.write(frame.to_csv(index=False))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_edge=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*(_fmt(v, 4) if isinstance(v, float) else str(v) for v in row))
    Console(width=None if sys.stdout.isatty() else 200).print(table)


def _command_query(args: argparse.Namespace) -> int:
    from . import study

    _print_frame(study.query(args.dir, args.sql), csv=args.csv)
    return EXIT_OK


COMMANDS = {
    "run": _command_run,
    "bench": _command_bench,
    "demo": _command_demo,
    "study": _command_study,
    "query": _command_query,
}


def _error(message: str) -> None:
    print(f"l4slab: error: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``l4slab`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ScenarioError as err:
        _error(str(err))
        return EXIT_USAGE
    except (EngineError, EngineUnavailableError) as err:
        _error(str(err))
        return EXIT_ENGINE
    except OSError as err:
        # e.g. an output directory that cannot be created or written.
        target = f"{err.filename}: " if getattr(err, "filename", None) else ""
        _error(f"{target}{err.strerror or err}")
        return EXIT_ENGINE
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
