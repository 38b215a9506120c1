"""``l4slab compare SCENARIO [--trials N] [--json FILE] [--csv FILE] [--out DIR]``: the scenario
simulated (N seeds) and emulated with real kernel TCP (N trials), a table per metric with
the simulated value, the emulated mean ± SD and the verdict "within spread / outside"
(the tolerances of :mod:`l4slab.emulate.compare`). Exit 0 whatever the verdicts
(they are data), 2 for bad input or a host/scenario the emulator refuses."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .common import (
    EXIT_OK,
    add_scenario_command,
    add_set_argument,
    check_out_dir,
    fmt,
    load_command_scenario,
    stdout_console,
)

#: Bound on --trials: each emulated trial takes the scenario's duration in real time.
MAX_TRIALS = 100


def add_parser(commands) -> None:
    cmd = add_scenario_command(
        commands,
        "compare",
        help="simulate and emulate one scenario, compare per metric",
        description=(
            "Simulate SCENARIO with N seeds and emulate it N times with real kernel TCP (l4slab-emu); print per "
            "metric the simulated value, the emulated mean ± SD and whether the simulation is within the "
            "emulated spread (throughput: max(3 Mbit/s, 2 SD); sojourn, sRTT: 15 %; drops, marks: 20 %)."
        ),
    )
    cmd.add_argument(
        "--trials", type=int, default=5, metavar="N", help="seeds simulated and trials emulated (default 5)"
    )
    cmd.add_argument("--seed", type=int, metavar="N", help="first seed (default: the scenario's)")
    add_set_argument(cmd)
    cmd.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    cmd.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    cmd.add_argument("--out", metavar="DIR", help="write every run directory: DIR/sim/seed-N, DIR/emulate/trial-N")
    cmd.add_argument(
        "--backend",
        choices=("emulate", "kernel"),
        default="emulate",
        help="the reference: emulate (real kernel TCP through l4slab-emu, default) or kernel (the whole scenario "
        "on a real Linux kernel in a virtual-time guest, one guest per trial; run directories DIR/kernel/trial-N)",
    )
    cmd.add_argument(
        "--accept-late",
        action="store_true",
        help="keep emulated trials in which the host stalled the emulator (kept_up false): their goodput, drop "
        "and mark rows get verdicts, their sojourn and sRTT rows read 'refused: not kept up'",
    )
    cmd.add_argument(
        "--host",
        choices=("ideal", "measured"),
        default="ideal",
        help="the simulated hosts: ideal (default), or measured: each udp_prague command flow's programs "
        "wake as late as l4slab-udp-prague measured in the matching emulated trial (wake_us, timer_late_us)",
    )
    cmd.add_argument(
        "--no-align",
        dest="align",
        action="store_false",
        help="start the simulated flows at the scenario's times, not where the emulated trials' data started "
        "(iperf3's control exchange delays the real data by 3-5 RTTs)",
    )


def _check_file(path: str | None, flag: str) -> None:
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        from ..errors import ScenarioError

        raise ScenarioError(f"{flag}: {path} is a directory; expected a file name")
    check_out_dir(target.parent if str(target.parent) else ".", flag)


def command(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..emulate.compare import compare
    from ..emulate.preflight import kernel_sender_notes
    from ..errors import ScenarioError
    from ..io import write_bytes

    if not 1 <= args.trials <= MAX_TRIALS:
        raise ScenarioError(f"--trials: {args.trials} is not in 1..{MAX_TRIALS}")
    _check_file(args.json, "--json")
    _check_file(args.csv, "--csv")
    scenario = load_command_scenario(args)

    def keep(backend: str, index: int, result) -> None:
        if args.out is not None:
            name = f"seed-{scenario.seed + index}" if backend == "sim" else f"trial-{index}"
            result.write(Path(args.out) / backend / name)

    reference = getattr(args, "backend", "emulate")
    rows, _sim, emu = compare(
        scenario,
        trials=args.trials,
        keep=keep,
        align=args.align,
        backend=reference,
        accept_late=getattr(args, "accept_late", False),
        host=getattr(args, "host", "ideal"),
    )
    records = [row.as_dict() for row in rows]
    if args.json:
        payload = {"scenario": scenario.name, "trials": args.trials, "aligned": args.align, "rows": records}
        payload["host"] = getattr(args, "host", "ideal")
        payload["backend"] = reference
        if reference == "kernel":
            payload["kernel"] = [s.get("kernel") for s in emu]
        else:
            payload["emulator"] = [s.get("emulator") for s in emu]
            payload["emulated_trials_kept"] = len(emu)
        write_bytes(Path(args.json), (json.dumps(payload, indent=2) + "\n").encode())
    if args.csv:
        import pandas as pd

        write_bytes(Path(args.csv), pd.DataFrame(records).to_csv(index=False).encode())

    console = stdout_console(120)
    what = "kernel" if reference == "kernel" else "emulated"
    detail = "real Linux kernel, virtual time" if reference == "kernel" else "real kernel TCP"
    table = Table(
        title=f"{scenario.name}: simulated ({args.trials} seeds) vs {what} ({args.trials} trials, {detail})",
        title_justify="left",
    )
    for header in ("metric", "flow", "sim", f"{what} mean ± SD", "tolerance", "verdict"):
        table.add_column(header, justify="left" if header in ("metric", "verdict") else "right")
    for row in rows:
        digits = 0 if row.metric in ("drops", "marks") else 2
        emu_text = f"{fmt(_f(row.emu_mean), digits)} ± {fmt(_f(row.emu_sd), digits)}"
        table.add_row(
            row.metric,
            "–" if row.flow is None else str(row.flow),
            fmt(_f(row.sim), digits),
            emu_text,
            fmt(_f(row.tolerance), digits),
            row.verdict,
        )
    console.print(table)
    # Under the verdicts they qualify; a refused scenario never gets this far.
    for note in kernel_sender_notes(scenario.resolve()):
        console.print(f"note: {note}", soft_wrap=True)
    errors = [s.get("emulator") or {} for s in emu]
    p99 = [e.get("departure_error_p99_us") for e in errors if e.get("departure_error_p99_us") is not None]
    if p99:
        console.print(f"emulator departure error P99 over trials: max {max(p99):.1f} µs", soft_wrap=True)
    if reference == "kernel":
        walls = [(s.get("kernel") or {}).get("guest_wall_s") for s in emu]
        walls = [w for w in walls if isinstance(w, (int, float))]
        release = next(((s.get("kernel") or {}).get("release") for s in emu), None)
        if walls:
            console.print(
                f"kernel: linux {release or '?'}, guest wall per trial {min(walls):.1f}-{max(walls):.1f} s; "
                "kernel sojourn is time-sampled per bin",
                soft_wrap=True,
            )
    kept = len(emu)
    if reference == "emulate" and kept < args.trials:
        console.print(f"{args.trials - kept} of {args.trials} emulated trials refused (the host did not keep up)")
    late = [e.get("accepted_late") for e in errors if e.get("accepted_late")]
    if late:
        console.print(
            f"{len(late)} of {kept} emulated trials kept although the host stalled the emulator (--accept-late; "
            f"timing rows refused): {late[0]}",
            soft_wrap=True,
        )
    if getattr(args, "host", "ideal") == "measured":
        from ..emulate.hosts import quantile

        for flow, ends in _simulated_hosts(_sim).items():
            said = "; ".join(
                f"{knob.replace('_', ' ')} P50 {quantile(q, 0.5):.0f} µs, P99 {quantile(q, 0.99):.0f} µs"
                for knob, q in ends.items()
                if not knob.endswith("_tail")
            )
            console.print(f"simulated on the measured host, flow {flow} (seed {scenario.seed}): {said}", soft_wrap=True)
    outside = sum(row.verdict == "outside" for row in rows)
    console.print(f"{len(rows) - outside} of {len(rows)} metrics within spread", soft_wrap=True)
    return EXIT_OK


def _f(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _simulated_hosts(sim: list[dict]) -> dict[str, dict[str, list[float]]]:
    """The first simulated seed's measured host: wake-up quantiles (µs) per flow and end."""
    return dict((sim[0].get("measured_host") or {}) if sim else {})
