"""N trials of a scenario with a UDP-Prague flow, simulated (seeds) or emulated (the
program as a command flow, runs kept with ``accept_late`` and marked): per trial and over
trials the L queue's mean sojourn in the summary window, the bottleneck's mark rate (marks
per packet sent, whole run), each flow's goodput and, with two flows, the goodput ratio of
the second to the first (docs/emulator-commands.md).

    python examples/emulator/udp_prague_trials.py SCENARIO.toml N sim|emulate
"""

from __future__ import annotations

import json
import statistics
import sys

from l4slab.emulate import emulate
from l4slab.runner import run
from l4slab.scenario import load_scenario


def _spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4g} ± {sd:.2g} [{min(values):.4g}, {max(values):.4g}]"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in ("sim", "emulate") or not argv[1].isdigit():
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    scenario, trials, side = load_scenario(argv[0]), int(argv[1]), argv[2]
    rows = []
    for i in range(trials):
        seed = scenario.seed + i
        summary = (run(scenario, seed=seed) if side == "sim" else emulate(scenario, seed=seed, accept_late=True)).summary
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
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{side}, {trials} trials: L mean sojourn ms {_spread([r['l_mean_ms'] for r in rows])}")
    print(f"{side}, {trials} trials: mark rate {_spread([r['mark_rate'] for r in rows])}")
    for flow in range(len(rows[0]["goodput_mbps"])):
        print(f"{side}, {trials} trials: flow {flow} goodput Mbit/s {_spread([r['goodput_mbps'][flow] for r in rows])}")
    if len(rows[0]["goodput_mbps"]) == 2:
        ratios = [r["goodput_mbps"][1] / r["goodput_mbps"][0] for r in rows]
        print(f"{side}, {trials} trials: goodput ratio flow 1 / flow 0 {_spread(ratios)}")
    if side == "emulate":
        print(f"kept up: {sum(bool(r['kept_up']) for r in rows)} of {trials}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
