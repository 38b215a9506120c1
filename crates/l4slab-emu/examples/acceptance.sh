#!/usr/bin/env bash
# The emulator's acceptance figure on its own: 100 Mbit/s, two CUBIC flows
# (iperf3, 20 s), a 2-BDP bfifo (250 000 B at 100 Mbit/s x 10 ms), 10 ms base RTT.
# Prints the bottleneck utilisation over [2 s, 20 s) (both flows running) and the
# departure error. Needs root, /dev/net/tun, ip and iperf3.
#   cargo build --release -p l4slab-emu && crates/l4slab-emu/examples/acceptance.sh [OUTDIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
EMU=${L4SLAB_EMU:-$ROOT/target/release/l4slab-emu}
OUT=${1:-$(mktemp -d /tmp/l4slab-emu-acceptance.XXXXXX)}
mkdir -p "$OUT"; rm -f "$OUT/ready.json"
cat > "$OUT/scenario.json" <<JSON
{"duration_ns": 20000000000, "warmup_ns": 2000000000, "bin_ns": 100000000, "seed": 1,
 "bottleneck": {"rate_bps": 100000000, "qdisc": {"kind": "bfifo", "limit_bytes": 250000}},
 "flows": [{"kind": "tcp", "cc": "cubic", "rtt_ns": 10000000},
           {"kind": "tcp", "cc": "cubic", "rtt_ns": 10000000}]}
JSON
"$EMU" run --config "$OUT/scenario.json" --out "$OUT" --ready-file "$OUT/ready.json" --prefix l4seacc &
EP=$!
trap 'kill -TERM $EP 2>/dev/null || true' INT TERM
for _ in $(seq 200); do [ -f "$OUT/ready.json" ] && break; sleep 0.05; done
# One python call for every field (starting interpreters costs ~0.1 s each on a busy host).
read -r S0 R0 A0 S1 R1 A1 < <(python3 -c "import json; f=json.load(open('$OUT/ready.json'))['flows']; print(*[x[k] for x in f for k in ('sender_ns','receiver_ns','receiver_addr')])")
# Every process is bounded in time (a server whose client never comes must not stay).
timeout 40 ip netns exec "$R0" iperf3 -s -1 -p 5201 > /dev/null &
timeout 40 ip netns exec "$R1" iperf3 -s -1 -p 5201 > /dev/null &
sleep 0.2
# 20 s transfers starting < 1 s after t0, so both run over the whole window [2 s, 20 s).
timeout 40 ip netns exec "$S0" iperf3 -c "$A0" -t 20 -C cubic -J > "$OUT/iperf0.json" &
timeout 40 ip netns exec "$S1" iperf3 -c "$A1" -t 20 -C cubic -J > "$OUT/iperf1.json" &
set +e; wait $EP; RC=$?; set -e
wait
python3 - "$OUT" "$RC" <<'PY'
import json, sys
out, rc = sys.argv[1], sys.argv[2]
m = json.load(open(f"{out}/emu_meta.json")); r = json.load(open(f"{out}/emu_results.json"))
b = r["bottleneck"]
g = [json.load(open(f"{out}/iperf{f}.json"))["end"]["sum_received"]["bits_per_second"] / 1e6 for f in (0, 1)]
e = m["departure_error_ns"]
print(f"utilisation [2 s, 20 s): {b['utilisation']*100:.2f} %  (acceptance >= 97 %)")
print(f"departure error: p50 {e['p50']/1e3:.1f} us, p99 {e['p99']/1e3:.1f} us, max {e['max']/1e3:.1f} us  (acceptance p99 < 100 us)")
print(f"cpu busy {m['cpu_busy_fraction']:.3f}, kept_up {m['kept_up']}, realtime {m.get('realtime')}, packets {m['packets_forwarded']}, exit {rc}")
print(f"per-flow L2 throughput {[round(f['throughput_mbps'],2) for f in r['flows']]} Mbit/s; iperf3 goodput {[round(x,2) for x in g]} Mbit/s")
print(f"bfifo: drops {b['drops']}, sojourn mean {b['sojourn_ms']['mean']:.2f} ms p99 {b['sojourn_ms']['p99']:.2f} ms, maxq {b['qdisc']['maxq_packets']} pkts")
PY
if ip netns list | grep -q '^l4seacc-'; then echo "namespaces left behind"; exit 1; fi
echo "no namespaces left"
