"""N trials of a scenario with a UDP-Prague flow, simulated (seeds) or emulated (the
program as a command flow, runs kept with ``accept_late`` and marked): per trial and over
trials the L queue's mean sojourn in the summary window, the bottleneck's mark rate (marks
per packet sent, whole run; and marks per arrival in the summary window, the start-up left
out as the L mean leaves it out), each flow's goodput and, with two flows, the goodput ratio of
the second to the first, and the UDP-Prague sender's mean alpha and srtt over the window (the
engine's flow series; the program's own rate samples) (docs/emulator-commands.md). Emulated, each trial also gives the
programs' measured host (``wake_us`` of send.json / recv.json, the sender's
``timer_late_us``: P50 and P99 per trial, and the quantiles); ``--save FILE`` keeps the
rows, and ``sim --hosts FILE`` runs the engine with those distributions pooled over the
trials the emulator kept up with (each trial's 1001 quantiles as equally weighted points, as the flow's
``sender_wake_latency``/``receiver_wake_latency``/``sender_timer_latency`` quantile lists:
the engine on the emulating host; with the programs' ``busy_us`` as
``sender_busy_time``/``receiver_busy_time``). ``table`` does it all in one go: N emulated
trials saved to ``--save``, then N seeds of the engine on an ideal host, on the measured
wake-ups and timer (their top 0.1 % drawn evenly up to the maximum as before the programs
wrote tails, then with the tails), and on the measured host with the busy times, and a table
saying whether each engine mean lies within the program's [min, max].

    python examples/emulator/udp_prague_trials.py SCENARIO.toml N sim|emulate [--save FILE] [--hosts FILE]
    python examples/emulator/udp_prague_trials.py SCENARIO.toml N table --save NEW.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from l4slab.emulate import emulate
from l4slab.errors import EngineError, ScenarioError
from l4slab.emulate.hosts import HOST_KEYS, HOST_PROGRAM, measured_hosts, pooled_quantiles, quantile
from l4slab.runner import run
from l4slab.scenario import load_scenario, scenario_from_toml


def _spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4g} ± {sd:.2g} [{min(values):.4g}, {max(values):.4g}]"


#: What the programs measure of their host (`l4slab.emulate.hosts.measured_hosts`), each a
#: scenario knob of the udp_prague flow (`HOST_KEYS`).
KNOBS = tuple(HOST_KEYS)
#: The host model without the programs' busy time per datagram (wake-ups and timer only).
WAKE_KNOBS = ("sender_wake", "receiver_wake", "sender_timer")
#: The same with the tails of their distributions.
WAKE_TAIL_KNOBS = WAKE_KNOBS + tuple(f"{knob}_tail" for knob in WAKE_KNOBS)


def _with_hosts(text: str, hosts_file: str, knobs_used: tuple[str, ...] = KNOBS) -> tuple[str, str]:
    """The scenario with every udp_prague flow's programs as late (and as busy) as measured."""
    try:
        with open(hosts_file) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError) as err:
        raise SystemExit(f"--hosts: {hosts_file}: {err}") from None
    # A trial the emulator did not keep up with measured a stall of the whole VM (the
    # emulator's too), not the programs' host: pooled only if no trial kept up.
    rows = [r for r in rows if r.get("kept_up")] or rows
    knobs, notes = "", []
    for knob in knobs_used:
        lists = [r[f"{knob}_quantiles_us"] for r in rows if r.get(f"{knob}_quantiles_us")]
        if not lists and knob not in WAKE_KNOBS:
            notes.append(f"{knob.replace('_', ' ')} not measured")  # rows of a program without busy_us or tails
            continue
        if not lists:
            raise SystemExit(f"--hosts: {hosts_file} has no {knob}_quantiles_us (rows of an emulate --save)")
        q = pooled_quantiles(lists)
        values = ", ".join(f'"{v:.1f}us"' for v in q)
        knobs += f"{HOST_KEYS[knob]} = [{values}]\n"
        p50, p90, p99 = (quantile(q, p) for p in (0.5, 0.9, 0.99))
        notes.append(f"{knob.replace('_', ' ')} P50 {p50:.0f} µs, P90 {p90:.0f}, P99 {p99:.0f}, max {q[-1]:.0f}")
    note = f"{'; '.join(notes)} (pooled over {len(rows)} trials)"
    return text.replace('kind = "udp_prague"\n', 'kind = "udp_prague"\n' + knobs), note


def _sender_state(scenario, side: str, result) -> tuple[float | None, float | None]:
    """The UDP-Prague sender's mean alpha and srtt (ms) over the summary window: the engine's
    flow series, or the program's own ``rate_samples`` (send.json, seconds since it started)."""
    flow = next((i for i, f in enumerate(scenario.flows) if getattr(f, "kind", None) == "udp_prague"), None)
    if flow is None:
        return None, None
    lo, hi = scenario.warmup / 1e9, scenario.duration / 1e9
    if side == "sim":
        fs = result.flow_series
        window = fs[(fs["flow"] == flow) & (fs["time_s"] >= lo) & (fs["time_s"] < hi)]
        pairs = list(zip(window["alpha"], window["srtt_ms"]))
    else:
        pairs = []
        for name, raw in (result.command_outputs.get(flow) or {}).items():
            try:
                sent = json.loads(raw) if name.endswith(".json") else {}
            except ValueError:
                continue
            if isinstance(sent, dict) and sent.get("program") == HOST_PROGRAM and sent.get("role") == "send":
                pairs = [(r["alpha"], r["srtt_ms"]) for r in sent.get("rate_samples") or [] if lo <= r["t_s"] < hi]
    pairs = [(a, r) for a, r in pairs if a == a and r == r]  # not NaN
    if not pairs:
        return None, None
    return statistics.fmean(a for a, _ in pairs), statistics.fmean(r for _, r in pairs)


def _trials(scenario, trials: int, side: str, save: str | None) -> list[dict]:
    """``trials`` runs (seeds from the scenario's), one row each (printed, and appended to ``save``)."""
    rows = []
    for i in range(trials):
        seed = scenario.seed + i
        result = run(scenario, seed=seed) if side == "sim" else emulate(scenario, seed=seed, accept_late=True)
        summary = result.summary
        bottleneck = summary["bottleneck"]
        low = next(c for c in bottleneck["sojourn_by_class"] if c["class"] == "L")["sojourn_ms"]
        qdisc = bottleneck["qdisc"]
        row = {
            "seed": seed,
            "l_mean_ms": low["mean"],
            "mark_rate": qdisc["marks"] / max(qdisc["sent_packets"], 1),
            "goodput_mbps": [f["goodput_mbps"] for f in summary["flows"]],
            "kept_up": (summary.get("emulator") or {}).get("kept_up"),
        }
        series = result.bottleneck_series
        window = series[(series["time_s"] >= scenario.warmup / 1e9) & (series["time_s"] < scenario.duration / 1e9)]
        row["window_mark_rate"] = float(window["marks"].sum()) / max(float(window["arrivals"].sum()), 1.0)
        row["alpha"], row["srtt_ms"] = _sender_state(scenario, side, result)
        if side == "emulate":
            measured = next(iter(measured_hosts(result.command_outputs).values()), {})
            for knob in KNOBS:
                q = measured.get(knob)
                row[f"{knob}_p50_us"], row[f"{knob}_p99_us"] = (quantile(q, 0.5), quantile(q, 0.99)) if q else (None, None)
                row[f"{knob}_quantiles_us"] = q
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("quantiles_us")}), flush=True)
        if save:
            with open(save, "a") as handle:
                handle.write(json.dumps(row) + "\n")
    return rows


def _metrics(rows: list[dict]) -> dict[str, list[float]]:
    out = {"L mean sojourn ms": [r["l_mean_ms"] for r in rows], "mark rate": [r["mark_rate"] for r in rows]}
    if all(r.get("window_mark_rate") is not None for r in rows):
        out["mark rate in the window"] = [r["window_mark_rate"] for r in rows]
    for flow in range(len(rows[0]["goodput_mbps"])):
        out[f"flow {flow} goodput Mbit/s"] = [r["goodput_mbps"][flow] for r in rows]
    if len(rows[0]["goodput_mbps"]) == 2:
        out["goodput ratio flow 1 / flow 0"] = [r["goodput_mbps"][1] / r["goodput_mbps"][0] for r in rows]
    for key, name in (("alpha", "sender alpha (window mean)"), ("srtt_ms", "sender srtt ms (window mean)")):
        values = [r[key] for r in rows if r.get(key) is not None]
        if len(values) == len(rows):
            out[name] = values
    return out


def _report(side: str, rows: list[dict]) -> None:
    for name, values in _metrics(rows).items():
        print(f"{side}, {len(rows)} trials: {name} {_spread(values)}")
    if side == "emulate":
        print(f"kept up: {sum(bool(r['kept_up']) for r in rows)} of {len(rows)}")
        for knob in KNOBS:
            for q in ("p50", "p99"):
                values = [r[f"{knob}_{q}_us"] for r in rows if r.get(f"{knob}_{q}_us") is not None]
                if values:
                    print(f"{side}, {len(rows)} trials: {knob.replace('_', ' ')} {q.upper()} µs {_spread(values)}")


def _table(text: str, base, path: str, trials: int, save: str) -> None:
    """The program's trials, then the engine on an ideal host; on the measured host's wake-ups
    and timer, their quantiles' top step drawn evenly up to the maximum, then resolved by
    their tails; and on the measured host with the programs' busy time too; each engine
    mean against the program's trials' [min, max]."""
    def scenario_of(t: str):
        return scenario_from_toml(t, source=path).model_copy(update={"name": base.name, "seed": base.seed})

    load = os.getloadavg()
    print(f"== the program, {trials} emulated trials (rows appended to {save}); load average {load[0]:.2f}", flush=True)
    emulated = _trials(scenario_of(text), trials, "emulate", save)
    load, kept = os.getloadavg(), sum(bool(r["kept_up"]) for r in emulated)
    print(f"after the emulated trials: load average {load[0]:.2f} (1 min), {load[1]:.2f} (5 min); "
          f"kept up: {kept} of {trials}")  # fmt: skip
    program = _metrics(emulated)
    engines = {"engine, ideal host": text}
    for label, knobs in (
        ("engine, measured wake-ups and timer, top step even", WAKE_KNOBS),
        ("engine, measured wake-ups and timer", WAKE_TAIL_KNOBS),
        ("engine, measured host incl. busy", KNOBS),
    ):
        engines[label], note = _with_hosts(text, save, knobs)
        print(f"{label}: {note}", flush=True)
    results = {}
    for label, t in engines.items():
        print(f"== {label}, {trials} seeds", flush=True)
        results[label] = _metrics(_trials(scenario_of(t), trials, "sim", None))
    print()
    print(f"| {path} | program ({trials} trials) | " + " | ".join(results) + " |")
    print("|---|---|" + "---|" * len(results))
    for name, values in program.items():
        lo, hi = min(values), max(values)
        cells = []
        for sim in results.values():
            mean = statistics.fmean(sim[name])
            cells.append(f"{mean:.4g} {'inside' if lo <= mean <= hi else 'OUTSIDE'}")
        print(f"| {name} | {_spread(values)} | " + " | ".join(cells) + " |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("trials", type=int)
    parser.add_argument("side", choices=("sim", "emulate", "table"))
    parser.add_argument("--save", help="write each trial's row (JSON lines) here (table: required, a new file)")
    parser.add_argument("--hosts", help="sim: the host latencies measured by an emulate --save")
    args = parser.parse_args(argv)
    if not 1 <= args.trials <= 100:
        parser.error("trials: allowed 1..100")
    if args.hosts and args.side != "sim":
        parser.error("--hosts: only with sim")
    try:
        with open(args.scenario) as handle:
            text = handle.read()
    except OSError as err:
        parser.error(f"scenario: {args.scenario}: {err.strerror}")
    base = load_scenario(args.scenario)
    if args.side == "table":
        if not args.save:
            parser.error("--save: required with table (the program's trials, which the engine's host reads)")
        if os.path.exists(args.save):
            parser.error(f"--save: {args.save} exists (table starts a new one)")
        _table(text, base, args.scenario, args.trials, args.save)
        return 0
    if args.hosts:
        text, note = _with_hosts(text, args.hosts)
        print(f"hosts: {note}", flush=True)
    scenario = scenario_from_toml(text, source=args.scenario).model_copy(update={"name": base.name, "seed": base.seed})
    _report(args.side, _trials(scenario, args.trials, args.side, args.save))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (EngineError, ScenarioError) as err:  # a run that failed: one line, not a traceback
        sys.exit(f"udp_prague_trials: {err}")
