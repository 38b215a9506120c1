"""l4slab-probe (``python/l4slab/kernel/guest/probe.c``), the kernel backend guest's sampler.

The probe needs Linux >= 7.0 uapi headers (``tcpi_ecn_mode``, ``struct tc_dualpi2_xstats``):
``$L4SLAB_UAPI_HEADERS`` (a ``headers_install`` include directory, or the directory above it),
else the newest that ``l4slab kernel build`` generated
(``~/.cache/l4slab/kernel/trees/*/hdr/usr/include``, or ``~/.cache/l4slab/kernel/*/uapi/include``),
else the host's ``/usr/include`` if it is new enough; without them, or without gcc and a static
libc, everything here skips with the reason. The compile must be free of warnings (``-Wall -Wextra -Werror``).

With root and ``ip netns``, a module fixture builds two namespaces of its own (unique prefix),
a veth pair with ``htb`` and a leaf qdisc (``fq_codel`` where the host kernel has it, else
``pfifo``) and a bounded TCP transfer between them (python sockets in ``ip netns exec``),
runs the probe against it, asserts real values, and removes everything it made. No traffic
leaves those two namespaces. About 5 s of wall time.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

PROBE_C = Path(__file__).resolve().parents[2] / "python" / "l4slab" / "kernel" / "guest" / "probe.c"
PORT = 5301


# ---------------------------------------------------------------------------- headers, build


def _header_dir_ok(d: Path) -> bool:
    try:
        tcp = (d / "linux" / "tcp.h").read_text()
        sched = (d / "linux" / "pkt_sched.h").read_text()
    except OSError:
        return False
    return "tcpi_ecn_mode" in tcp and "struct tc_dualpi2_xstats" in sched


def find_uapi_headers() -> tuple[Path | None, str]:
    """The include directory to compile against, or None and why not."""
    tried = []
    env = os.environ.get("L4SLAB_UAPI_HEADERS")
    if env:
        for d in (Path(env), Path(env) / "include"):
            if _header_dir_ok(d):
                return d, ""
        return None, f"L4SLAB_UAPI_HEADERS={env} has no Linux >= 7.0 linux/tcp.h and linux/pkt_sched.h"
    cached = sorted(
        glob.glob(os.path.expanduser("~/.cache/l4slab/kernel/trees/*/hdr/usr/include"))
        + glob.glob(os.path.expanduser("~/.cache/l4slab/kernel/*/uapi/include")),
        key=lambda p: os.stat(p).st_mtime,
        reverse=True,
    )
    for c in cached:
        tried.append(c)
        if _header_dir_ok(Path(c)):
            return Path(c), ""
    tried.append("/usr/include")
    if _header_dir_ok(Path("/usr/include")):
        return Path("/usr/include"), ""
    return None, (
        "no Linux >= 7.0 uapi headers (tcpi_ecn_mode, tc_dualpi2_xstats) in "
        + ", ".join(tried)
        + ": set L4SLAB_UAPI_HEADERS to a `make headers_install` include directory"
    )


@pytest.fixture(scope="module")
def headers() -> Path:
    d, why = find_uapi_headers()
    if d is None:
        pytest.skip(why)
    return d


@pytest.fixture(scope="module")
def probe(headers: Path, tmp_path_factory) -> Path:
    """probe.c compiled as the guest build does, with warnings as errors."""
    gcc = shutil.which("gcc")
    if not gcc:
        pytest.skip("gcc is not installed")
    out = tmp_path_factory.mktemp("probe") / "l4slab-probe"
    flags = ["-std=c11", "-O2", "-static", "-Wall", "-Wextra", "-Werror", f"-I{headers}"]
    cmd = [gcc, *flags, str(PROBE_C), "-o", str(out)]
    if shutil.which("nice"):
        cmd = ["nice", "-n", "10", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and re.search(r"cannot find -lc\b", r.stderr):
        pytest.skip("no static C library (libc.a) for gcc -static")
    assert r.returncode == 0, f"probe.c does not compile cleanly against {headers}:\n{r.stderr}"
    assert r.stderr.strip() == "", f"probe.c compiles with diagnostics:\n{r.stderr}"
    return out


def tcp_info_fields(headers: Path) -> list[str]:
    """The member names of struct tcp_info in the headers, without the tcpi_ prefix."""
    text = (headers / "linux" / "tcp.h").read_text()
    body = re.search(r"struct tcp_info \{(.*?)\n\};", text, re.S)
    assert body, "struct tcp_info not found"
    code = re.sub(r"/\*.*?\*/", "", body.group(1), flags=re.S)
    return re.findall(r"\btcpi_(\w+)", code)


def read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines]


# ---------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--once", "--tcp-ns", "x"], "--out"),
        (["--out", "-", "--tcp-ns", "x"], "--duration"),
        (["--out", "-", "--duration", "1s", "--interval", "100", "--tcp-ns", "x"], "--interval"),
        (["--out", "-", "--duration", "1s", "--interval", "0ms", "--tcp-ns", "x"], "--interval"),
        (["--out", "-", "--duration", "8d", "--tcp-ns", "x"], "--duration"),
        (["--out", "-", "--once", "--tcp-ns", "a/b"], "--tcp-ns"),
        (["--out", "-", "--once", "--qdisc", "nodevice"], "--qdisc"),
        (["--out", "-", "--once", "--qdisc-ns", "a"], "--qdisc-ns"),
        (["--out", "-", "--once", "--tcp-ns", "x", "--filter-dport", "70000"], "--filter-dport"),
        (["--out", "-", "--once"], "nothing to sample"),
        (["--out", "-", "--once", "--tcp-ns", "x", "--frobnicate"], "--frobnicate"),
        (["--out", "-", "--once", "--duration", "1s", "--tcp-ns", "x"], "--once"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(probe: Path, args: list[str], names: str):
    r = subprocess.run([str(probe), *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and names in lines[0] and "allowed" in lines[0], r.stderr


def test_tcp_info_table_is_complete(headers: Path):
    """Every struct tcp_info member of the headers is named in probe.c (by the TI() table or
    as a bit field), so a new kernel field cannot be silently missed."""
    src = PROBE_C.read_text()
    named = set(re.findall(r"\bTI\((\w+)\)", src)) | set(re.findall(r'j_u64\("(\w+)", ti\.tcpi_', src))
    missing = [f for f in tcp_info_fields(headers) if f not in named]
    assert missing == [], f"tcp_info fields not printed by probe.c: {missing}"


# ---------------------------------------------------------------------------- live namespaces


def _netns_skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "the live probe tests need root (ip netns, veth, tc)"
    if not shutil.which("ip") or not shutil.which("tc"):
        return "the live probe tests need ip and tc (iproute2)"
    return None


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


SERVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
end = time.monotonic() + 30
while time.monotonic() < end:
    if not c.recv(1 << 16):
        break
"""

CLIENT = """
import os, socket, sys, time
s = socket.socket(); s.settimeout(10)
for _ in range(100):
    try:
        s.connect((sys.argv[1], int(sys.argv[2]))); break
    except OSError:
        time.sleep(0.05); s = socket.socket(); s.settimeout(10)
buf = b"x" * (1 << 16); sent = 0; end = time.monotonic() + 25
while time.monotonic() < end and not os.path.exists(sys.argv[3]):
    sent += s.send(buf)
    if sent >= 1 << 21 and not os.path.exists(sys.argv[3] + ".go"):
        open(sys.argv[3] + ".go", "w").close()
s.close()
"""


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    """Two namespaces A -- B (veth, 10.213.7.1 -> .2), htb 20mbit + a leaf qdisc on A's
    egress, and a TCP transfer A -> B that runs until the stop file appears (25 s at most)."""
    why = _netns_skip_reason()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:6]
    ns_a, ns_b = f"l4p{tag}a", f"l4p{tag}b"
    dev_a, dev_b = f"l4p{tag}va", f"l4p{tag}vb"
    work = tmp_path_factory.mktemp("testbed")
    stop = work / "stop"
    made: list[str] = []
    procs: list[subprocess.Popen] = []
    try:
        for ns in (ns_a, ns_b):
            r = _run("ip", "netns", "add", ns, check=False)
            if r.returncode != 0:
                pytest.skip(f"ip netns add failed: {r.stderr.strip()}")
            made.append(ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "link", "add", dev_a, "netns", ns_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b)
        _run("ip", "-n", ns_a, "addr", "add", "10.213.7.1/24", "dev", dev_a)
        _run("ip", "-n", ns_b, "addr", "add", "10.213.7.2/24", "dev", dev_b)
        _run("ip", "-n", ns_a, "link", "set", dev_a, "up")
        _run("ip", "-n", ns_b, "link", "set", dev_b, "up")
        _run("tc", "-n", ns_a, "qdisc", "add", "dev", dev_a, "root", "handle", "1:", "htb", "default", "3")
        _run("tc", "-n", ns_a, "class", "add", "dev", dev_a, "parent", "1:", "classid", "1:3", "htb", "rate", "20mbit")
        leaf = "fq_codel"
        r = _run("tc", "-n", ns_a, "qdisc", "add", "dev", dev_a, "parent", "1:3", "handle", "10:", leaf, check=False)
        if r.returncode != 0:  # a host kernel without fq_codel
            leaf = "pfifo"
            _run("tc", "-n", ns_a, "qdisc", "add", "dev", dev_a, "parent", "1:3", "handle", "10:", leaf)
        procs.append(
            subprocess.Popen(
                ["ip", "netns", "exec", ns_b, "timeout", "40", sys.executable, "-c", SERVER, "10.213.7.2", str(PORT)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        procs.append(
            subprocess.Popen(
                ["ip", "netns", "exec", ns_a, "timeout", "40", sys.executable, "-c", CLIENT]
                + ["10.213.7.2", str(PORT), str(stop)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        go = Path(str(stop) + ".go")
        deadline = time.monotonic() + 15
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert go.exists(), "the TCP transfer between the test namespaces did not start"
        yield {"ns_a": ns_a, "ns_b": ns_b, "dev_a": dev_a, "leaf": leaf, "work": work}
    finally:
        stop.touch()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        for ns in made:
            _run("ip", "netns", "del", ns, check=False)
    assert not any(n in _run("ip", "netns", "list").stdout for n in (ns_a, ns_b))


def _probe(probe: Path, out: Path, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(probe), "--out", str(out), *args], capture_output=True, text=True, timeout=timeout)


def test_once_reads_real_tcp_and_qdisc_values(probe: Path, headers: Path, testbed):
    a, b, dev = testbed["ns_a"], testbed["ns_b"], testbed["dev_a"]
    out = testbed["work"] / "once.jsonl"
    r = _probe(probe, out, "--once", "--tcp-ns", f"{a},{b}", "--qdisc", f"{a}:{dev}")
    assert r.returncode == 0 and r.stderr == "", r
    recs = read_jsonl(out)
    start, end = recs[0], recs[-1]
    assert start["kind"] == "start" and start["version"] == 1 and start["interval_ns"] > 0
    assert end["kind"] == "end" and end["reason"] == "done" and end["ticks"] == 1 and end["skipped"] == 0
    assert end["errors"] == 0 and end["records"] == len(recs) - 2
    body = recs[1:-1]
    assert all(x["tick"] == 0 and x["t_ns"] >= start["t_ns"] for x in body)

    snd = [x for x in body if x["kind"] == "tcp" and x["ns"] == a and x["dport"] == PORT]
    rcv = [x for x in body if x["kind"] == "tcp" and x["ns"] == b and x["sport"] == PORT]
    assert len(snd) == 1 and len(rcv) == 1, body
    s, c = snd[0], rcv[0]
    assert (s["src"], s["dst"], s["state"]) == ("10.213.7.1", "10.213.7.2", 1)
    assert s["cc"] and isinstance(s["cc"], str)
    info = s["info"]
    assert info["snd_cwnd"] > 0 and info["rtt"] > 0 and info["bytes_acked"] > 0 and info["snd_mss"] > 0
    assert c["info"]["bytes_received"] > 0
    # every field the kernel's attribute covers, by its uapi name
    fields = tcp_info_fields(headers)
    if s["info_len"] >= start["tcpi_size"]:
        assert list(info) == fields
    else:  # an older host kernel: a prefix of the fields
        assert set(info) <= set(fields) and "snd_cwnd" in info
    if s["cc"] == "bbr":
        assert s["cc_info"]["attr"] == "bbr" and s["cc_info"]["min_rtt"] > 0
    elif s["cc"] == "dctcp":
        assert s["cc_info"]["attr"] == "dctcp"

    qd = {x["handle"]: x for x in body if x["kind"] == "qdisc"}
    cl = {x["handle"]: x for x in body if x["kind"] == "class"}
    root, leaf, cls = qd["1:"], qd["10:"], cl["1:3"]
    assert (root["type"], root["parent"], root["dev"], root["ns"]) == ("htb", "root", dev, a)
    assert (leaf["type"], leaf["parent"]) == (testbed["leaf"], "1:3")
    for x in (root, leaf, cls):
        assert x["packets"] > 0 and x["bytes"] > 0
        assert {"qlen", "backlog", "drops", "requeues", "overlimits"} <= set(x)
    assert cls["type"] == "htb" and set(cls["xstats"]) == {"lends", "borrows", "giants", "tokens", "ctokens"}
    assert cls["xstats"]["lends"] > 0
    if testbed["leaf"] == "fq_codel":
        assert leaf["xstats"]["type"] == 0 and "maxpacket" in leaf["xstats"] and leaf["xstats"]["maxpacket"] > 0


def test_filter_dport(probe: Path, testbed):
    a, b = testbed["ns_a"], testbed["ns_b"]
    out = testbed["work"] / "filter.jsonl"
    r = _probe(probe, out, "--once", "--tcp-ns", f"{a},{b}", "--filter-dport", str(PORT))
    assert r.returncode == 0, r
    tcp = [x for x in read_jsonl(out) if x["kind"] == "tcp"]
    assert len(tcp) == 1 and tcp[0]["ns"] == a and tcp[0]["dport"] == PORT
    r = _probe(probe, out, "--once", "--tcp-ns", f"{a},{b}", "--filter-port", str(PORT))
    assert r.returncode == 0, r
    assert sorted(x["ns"] for x in read_jsonl(out) if x["kind"] == "tcp") == sorted([a, b])


def test_schedule_ticks_and_missing_sources(probe: Path, testbed):
    a = testbed["ns_a"]
    out = testbed["work"] / "sched.jsonl"
    t0 = time.monotonic()
    sources = ["--tcp-ns", f"{a},l4pnosuchns", "--qdisc", f"{a}:nodev0"]
    r = _probe(probe, out, "--interval", "20ms", "--duration", "200ms", *sources)
    assert r.returncode == 0, r
    assert time.monotonic() - t0 < 10
    recs = read_jsonl(out)
    end = recs[-1]
    assert end["kind"] == "end" and end["reason"] == "done" and end["ticks"] + end["skipped"] == 11
    ticks = sorted({x["tick"] for x in recs if x["kind"] == "tcp"})
    assert len(ticks) == end["ticks"] and ticks[-1] <= 10
    for x in recs:
        if x["kind"] == "tcp":  # absolute schedule: tick k is sampled at or after start + k * interval
            assert x["t_ns"] >= recs[0]["t_ns"] + x["tick"] * 20_000_000
    errors = [x for x in recs if x["kind"] == "error"]
    # each missing source is reported once, counted at every tick
    assert sorted((x["what"], x["errno"]) for x in errors) == [("ifindex", 19), ("open_netns", 2)]
    assert end["errors"] == 2 * end["ticks"]


def test_sigterm_writes_end_line_and_exits_0(probe: Path, testbed):
    a, dev = testbed["ns_a"], testbed["dev_a"]
    out = testbed["work"] / "term.jsonl"
    p = subprocess.Popen(
        [str(probe), "--out", str(out), "--interval", "50ms", "--duration", "600s"]
        + ["--tcp-ns", a, "--qdisc", f"{a}:{dev}"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not out.exists() or out.read_text().count('"tick":2,') == 0):
            time.sleep(0.02)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 0
    recs = read_jsonl(out)  # every line complete
    end = recs[-1]
    assert end["kind"] == "end" and end["reason"] == "signal" and end["signal"] == signal.SIGTERM
    assert 3 <= end["ticks"] < 600 / 0.05
