"""Arrival bursts at the bottleneck, from a run directory's per-packet sojourn trace.

Usage: python bursts.py RUN_DIR [RUN_DIR ...] --rate-bps R [--from S] [--to S]

The trace (`trace_sojourn = true`) holds every packet that left the bottleneck: its
dequeue time and its sojourn, so its enqueue time is dequeue − sojourn, for the engine
and the emulator alike. A burst is a run of one flow's packets whose enqueue times are
less than one serialisation time of a full frame (1514 B at the bottleneck rate) apart.
Printed per run: the packet-weighted burst-size distribution, the mean sojourn, the share
of packets waiting > 0.3 ms, and the mean sojourn a burst alone explains on an empty queue
((k − 1)/2 serialisation times for a burst of k), plus the ACKs per data packet of
summary.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def bursts(run: Path, rate_bps: float, t_from: float, t_to: float) -> dict:
    table = pq.read_table(run / "sojourn.parquet").to_pandas()
    ser_s = 1514 * 8 / rate_bps
    out = {"run": str(run)}
    table["enq_s"] = table["time_s"] - table["sojourn_ms"] / 1e3
    table = table[(table["enq_s"] >= t_from) & (table["enq_s"] < t_to)]
    sizes = []
    for _, g in table.groupby("flow"):
        enq = np.sort(g["enq_s"].to_numpy())
        if len(enq) == 0:
            continue
        cut = np.flatnonzero(np.diff(enq) >= ser_s)
        edges = np.concatenate(([0], cut + 1, [len(enq)]))
        sizes.extend(np.diff(edges).tolist())
    sizes = np.asarray(sizes)
    n = sizes.sum()
    hist = {}
    for k in range(1, 9):
        hist[str(k)] = float(sizes[sizes == k].sum() / n)
    hist[">8"] = float(sizes[sizes > 8].sum() / n)
    out["packets"] = int(n)
    out["share_of_packets_by_burst_size"] = hist
    out["mean_burst_pkt_weighted"] = float((sizes * sizes).sum() / n)
    out["burst_only_sojourn_ms"] = float((sizes * (sizes - 1) / 2).sum() / n * ser_s * 1e3)
    soj = table["sojourn_ms"].to_numpy()
    out["mean_sojourn_ms"] = float(soj.mean())
    out["share_over_0.3ms"] = float((soj > 0.3).mean())
    summary = json.loads((run / "summary.json").read_text())
    out["acks_per_data_packet"] = [
        (f.get("acks_sent"), f.get("packets_sent"), f.get("acks_per_packet")) for f in summary.get("flows", [])
    ]
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--rate-bps", type=float, required=True)
    ap.add_argument("--from", dest="t_from", type=float, default=2.0)
    ap.add_argument("--to", dest="t_to", type=float, default=1e9)
    a = ap.parse_args(argv)
    for run in a.runs:
        print(json.dumps(bursts(run, a.rate_bps, a.t_from, a.t_to)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
