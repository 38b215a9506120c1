"""N trials of a scenario with a UDP-Prague flow, simulated (seeds) or emulated (the
program as a command flow, runs kept with ``accept_late`` and marked): per trial and over
trials the L queue's mean sojourn in the summary window, the bottleneck's mark rate (marks
per packet sent, whole run), each flow's goodput and, with two flows, the goodput ratio of
the second to the first (docs/emulator-commands.md). Emulated, each trial also gives the
programs' measured host (``wake_us`` of send.json / recv.json, the sender's
``timer_late_us``: P50 and P99 per trial, and the quantiles); ``--save FILE`` keeps the
rows, and ``sim --hosts FILE`` runs the engine with those distributions pooled over the
trials the emulator kept up with (each trial's 1001 quantiles as equally weighted points, as the flow's
``sender_wake_latency``/``receiver_wake_latency``/``sender_timer_latency`` quantile lists:
the engine on the emulating host).

    python examples/emulator/udp_prague_trials.py SCENARIO.toml N sim|emulate [--save FILE] [--hosts FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from l4slab.emulate import emulate
from l4slab.emulate.hosts import measured_hosts, pooled_quantiles, quantile
from l4slab.runner import run
from l4slab.scenario import load_scenario, scenario_from_toml


def _spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4g} ± {sd:.2g} [{min(values):.4g}, {max(values):.4g}]"


#: What the programs measure of their host (`l4slab.emulate.compare.measured_hosts`), each a
#: scenario knob `<name>_latency` of the udp_prague flow.
KNOBS = ("sender_wake", "receiver_wake", "sender_timer")


def _with_hosts(text: str, hosts_file: str) -> tuple[str, str]:
    """The scenario with every udp_prague flow's programs as late as measured."""
    try:
        with open(hosts_file) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError) as err:
        raise SystemExit(f"--hosts: {hosts_file}: {err}") from None
    # A trial the emulator did not keep up with measured a stall of the whole VM (the
    # emulator's too), not the programs' host: pooled only if no trial kept up.
    rows = [r for r in rows if r.get("kept_up")] or rows
    knobs, notes = "", []
    for knob in KNOBS:
        lists = [r[f"{knob}_quantiles_us"] for r in rows if r.get(f"{knob}_quantiles_us")]
        if not lists:
            raise SystemExit(f"--hosts: {hosts_file} has no {knob}_quantiles_us (rows of an emulate --save)")
        q = pooled_quantiles(lists)
        values = ", ".join(f'"{v:.1f}us"' for v in q)
        knobs += f"{knob}_latency = [{values}]\n"
        p50, p90, p99 = (quantile(q, p) for p in (0.5, 0.9, 0.99))
        notes.append(f"{knob.replace('_', ' ')} P50 {p50:.0f} µs, P90 {p90:.0f}, P99 {p99:.0f}, max {q[-1]:.0f}")
    note = f"{'; '.join(notes)} (pooled over {len(rows)} trials)"
    return text.replace('kind = "udp_prague"\n', 'kind = "udp_prague"\n' + knobs), note


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("scenario")
    parser.add_argument("trials", type=int)
    parser.add_argument("side", choices=("sim", "emulate"))
    parser.add_argument("--save", help="write each trial's row (JSON lines) here")
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
    if args.hosts:
        text, note = _with_hosts(text, args.hosts)
        print(f"hosts: {note}", flush=True)
    scenario, trials, side = scenario_from_toml(text, source=args.scenario), args.trials, args.side
    scenario = scenario.model_copy(update={"name": base.name, "seed": base.seed})
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
        if side == "emulate":
            measured = next(iter(measured_hosts(result.command_outputs).values()), {})
            for knob in KNOBS:
                q = measured.get(knob)
                row[f"{knob}_p50_us"], row[f"{knob}_p99_us"] = (quantile(q, 0.5), quantile(q, 0.99)) if q else (None, None)
                row[f"{knob}_quantiles_us"] = q
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("quantiles_us")}), flush=True)
        if args.save:
            with open(args.save, "a") as handle:
                handle.write(json.dumps(row) + "\n")
    print(f"{side}, {trials} trials: L mean sojourn ms {_spread([r['l_mean_ms'] for r in rows])}")
    print(f"{side}, {trials} trials: mark rate {_spread([r['mark_rate'] for r in rows])}")
    for flow in range(len(rows[0]["goodput_mbps"])):
        print(f"{side}, {trials} trials: flow {flow} goodput Mbit/s {_spread([r['goodput_mbps'][flow] for r in rows])}")
    if len(rows[0]["goodput_mbps"]) == 2:
        ratios = [r["goodput_mbps"][1] / r["goodput_mbps"][0] for r in rows]
        print(f"{side}, {trials} trials: goodput ratio flow 1 / flow 0 {_spread(ratios)}")
    if side == "emulate":
        print(f"kept up: {sum(bool(r['kept_up']) for r in rows)} of {trials}")
        for knob in KNOBS:
            for q in ("p50", "p99"):
                values = [r[f"{knob}_{q}_us"] for r in rows if r[f"{knob}_{q}_us"] is not None]
                if values:
                    print(f"{side}, {trials} trials: {knob.replace('_', ' ')} latency {q.upper()} µs {_spread(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
