"""Engine speed of several l4slab builds side by side, interleaved in one sitting.

    python examples/bench/side_by_side.py [--rounds N] NAME=L4SLAB [NAME=L4SLAB ...]

Each L4SLAB is an ``l4slab`` executable of its own venv, e.g. the Makefile's profile-guided
build (``.venv/bin/l4slab``), the same tree built plain (``L4SLAB_PGO=0 make install
VENV=.venv-plain CARGO_TARGET_DIR=$PWD/target-plain``) and an older commit's checkout with
its own ``make install``. Every round runs each build in turn on each scenario (``l4slab
bench --json --repeat 3``: the reference and the three heavier bench scenarios), so a
change of the machine's load falls on all builds alike; prints the median (range) of the
rounds' bottleneck data packets per second of wall time, each build's ratio to the first
build, the ACKs per data packet (the model's, which differ between versions) and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCENARIOS = {
    "reference": [],
    "l4s": ["--scenario", str(BENCH / "prague-dualpi2.toml")],
    "512": ["--scenario", str(BENCH / "512-flows.toml")],
    "10g": ["--scenario", str(BENCH / "10gbit.toml")],
}
# A bench run of these takes seconds; one that hangs is stopped and named.
TIMEOUT_S = 600


def _build(text: str) -> tuple[str, str]:
    name, sep, exe = text.partition("=")
    if not sep or not name or not os.access(exe, os.X_OK):
        raise argparse.ArgumentTypeError(f"build {text!r}: expected NAME=PATH of an l4slab executable")
    return name, exe


def _rounds(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 50:
        raise argparse.ArgumentTypeError(f"rounds {text!r}: expected a whole number from 1 to 50")
    return int(text)


def _bench(name: str, exe: str, extra: list[str]) -> dict:
    argv = [exe, "bench", "--json", "--repeat", "3", *extra]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.exit(f"side_by_side: build {name}: `{' '.join(argv)}` did not finish in {TIMEOUT_S} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit(f"side_by_side: build {name}: `{' '.join(argv)}` failed: {last}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=_rounds, default=5)
    parser.add_argument("builds", nargs="+", type=_build, metavar="NAME=L4SLAB")
    args = parser.parse_args()
    builds = dict(args.builds)
    rates: dict[tuple[str, str], list[float]] = {}
    acks: dict[tuple[str, str], float] = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for scenario, extra in SCENARIOS.items():
            for name, exe in builds.items():
                d = _bench(name, exe, extra)
                rates.setdefault((scenario, name), []).append(d["data_packets"] / d["wall_s"] / 1e6)
                acks[(scenario, name)] = d["ack_packets"] / d["data_packets"]
        loads.append(os.getloadavg()[0])
    first = next(iter(builds))
    print(f"{args.rounds} rounds, load {min(loads):.1f}-{max(loads):.1f}; M data packets/s, median (range)")
    for scenario in SCENARIOS:
        base = statistics.median(rates[(scenario, first)])
        cells = []
        for name in builds:
            r = rates[(scenario, name)]
            m = statistics.median(r)
            cells.append(f"{name} {m:.2f} ({min(r):.2f}-{max(r):.2f}) x{m / base:.2f} acks/pkt {acks[(scenario, name)]:.3f}")
        print(f"{scenario:9}  " + "  |  ".join(cells))


if __name__ == "__main__":
    main()
