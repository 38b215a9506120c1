"""Export a run directory to the formats of the tools network researchers already use.

* :func:`to_flent` writes a ``.flent.gz`` that flent itself loads and plots
  (``flent -i FILE -p all_scaled -o out.png``). It is written by flent's own
  ``ResultSet`` (PyPI ``flent``), as the ``rrul_be_nflows`` test with one
  ``TCP upload BE::n`` series per forward TCP flow, one ``TCP download BE::n`` per
  reverse one (``direction = "reverse"``), their ``avg``/``sum``, and ``Ping (ms)``
  series. A simulator has no ping: ``Ping (ms) ICMP`` is the RTT that flent's ping
  (``ping -D -i STEP`` of iputils, one echo per step through the same path as the load,
  flent ``runners.py:PingRunner``) would have measured: the first flow's base RTT plus the
  queueing its Not-ECT echo request meets at the bottleneck (:func:`icmp_queue_ms`), and
  ``Ping (ms) UDP BE`` the first forward TCP flow's sRTT. Each series keeps its flow's label
  in the metadata (``SERIES_META``). The run sits where flent puts the load: from ``DELAY``
  (flent's ``-d``, 5 s) to ``DELAY + LENGTH`` of a ``TOTAL_LENGTH = LENGTH + 2·DELAY`` test,
  so flent's plots that cut ``DELAY`` off each end (``ping_cdf``, ``box_*``) keep the whole
  run however short it is.
* :func:`to_iperf3_json` writes one ``iperf3 -J``-shaped file per TCP flow with the
  fields scripts read: ``start.test_start`` (protocol, duration), ``intervals``
  (per-bin ``bits_per_second``, ``snd_cwnd``, ``rtt``, ``retransmits``) and
  ``end.sum_received`` / ``end.sum_sent`` / ``end.streams[0].sender`` with
  ``mean_rtt``, ``min_rtt``, ``max_rtt`` (µs) and ``retransmits``, as iperf3 3.x
  reports them (``iperf_api.c:iperf_json_finish`` / ``iperf_print_results``).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ScenarioError
from .io import check_regular, read_input, write_bytes

__all__ = ["to_flent", "to_iperf3_json", "read_run"]

FLENT_TEST = "rrul_be_nflows"


def read_run(run_dir: str | Path) -> dict[str, Any]:
    """The parts of a finished run directory, or of a study's run (``STUDY_DIR/runs/<id>``,
    :mod:`l4slab.study.runfile`; written to ``STUDY_DIR/export/<id>``), the exporters read; a
    one-line :class:`ScenarioError` if it is neither."""
    directory = Path(run_dir)
    from .study import runfile

    study_run = runfile.resolve(directory)
    if study_run is not None:  # a study's run: written beside the study, in export/<run id>
        run = runfile.load(study_run)
        target = run["study_dir"] / "export" / run["run_id"]
        target.mkdir(parents=True, exist_ok=True)
        return {"dir": target, "summary": run["summary"], "config": run["config"],
                "flow_series": run["flow_series"], "bottleneck": run["bottleneck_series"]}  # fmt: skip
    if not (directory / "summary.json").is_file():
        raise ScenarioError(
            f"{directory}: not a finished run directory (no summary.json); write one with `l4slab run ... --out DIR`"
        )
    try:
        summary = json.loads(read_input(directory / "summary.json", "summary file"))
        config = json.loads(read_input(directory / "scenario.json", "scenario file"))
        flow_series = pd.read_parquet(check_regular(directory / "flow_series.parquet"))
        bottleneck = pd.read_parquet(check_regular(directory / "bottleneck_series.parquet"))
    except (OSError, ValueError) as err:
        raise ScenarioError(f"{directory}: unreadable run directory ({' '.join(str(err).split())[:120]})") from None
    return {
        "dir": directory,
        "summary": summary,
        "config": config,
        "flow_series": flow_series,
        "bottleneck": bottleneck,
    }


def _finite(values) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v) for v in values]


def _tcp_flows(run: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(summary flow, engine flow config) of every TCP flow, in flow-id order."""
    flows = run["summary"]["flows"]
    configs = run["config"]["flows"]
    return [(f, configs[f["id"]]) for f in flows if f.get("kind") == "tcp" and f["id"] < len(configs)]


def icmp_queue_ms(run: dict[str, Any]) -> pd.Series:
    """Per bin, the bottleneck queueing (ms) an ICMP echo request sent in the bin would meet:
    an echo is Not-ECT and belongs to no TCP flow, so

    * DualPI2 puts it in the classic queue (RFC 9332 §2.3: only ECT(1) and CE are
      classified L4S; ``sch_dualpi2.c:dualpi2_classify``): the C queue's mean sojourn
      (``sojourn_c_ms``), not the mix of both queues, which the L queue's sub-millisecond
      sojourns pull down;
    * a flow-queueing qdisc (``fq``, ``fq_codel``: a flow per 5-tuple hash) gives the echo a
      queue of its own, new and sparse, served before the bulk flows' (``fq_codel_enqueue``
      puts it on ``new_flows``): it waits for no backlog, 0;
    * any other qdisc has one queue: its mean sojourn.

    A bin in which the queue dequeued nothing had none to wait behind: 0."""
    bottleneck = run["bottleneck"]
    qdisc = ((run["config"].get("bottleneck") or {}).get("qdisc") or {}).get("kind")
    if "sojourn_c_ms" in bottleneck:
        queue = bottleneck["sojourn_c_ms"]
    elif qdisc in ("fq", "fq_codel"):
        queue = pd.Series(0.0, index=bottleneck.index)
    else:
        queue = bottleneck["sojourn_ms"]
    return queue.astype("float64").fillna(0.0)


def to_flent(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write ``run_dir`` as a flent data file; return its path (default
    ``RUN_DIR/<name>.flent.gz``). Needs PyPI ``flent`` (``pip install 'l4slab[flent]'``)."""
    try:
        from flent import resultset
    except ImportError:
        raise ScenarioError("export --flent needs flent: pip install 'l4slab[flent]' (or pip install flent)") from None
    run = read_run(run_dir)
    series = run["flow_series"]
    times = sorted(series["time_s"].unique().tolist()) if len(series) else run["bottleneck"]["time_s"].tolist()
    bin_s = float(run["summary"]["bin_s"])
    # The run is the load of a flent test: it starts DELAY into the test (flent's default -d),
    # and flent's x values are the ends of its sampling steps.
    from flent.settings import parser as flent_settings

    delay = int(flent_settings.get_default("DELAY"))
    x_values = [round(delay + t + bin_s, 9) for t in times]
    length = int(round(float(run["summary"]["duration_s"])))
    tcp = _tcp_flows(run)
    up = [(f, c) for f, c in tcp if not c.get("reverse")]
    down = [(f, c) for f, c in tcp if c.get("reverse")]
    name = run["summary"].get("scenario") or run["dir"].name
    start = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc)
    # Every setting flent records for a run it made (resultset.RECORDED_SETTINGS), as flent's
    # plotter reads them all; the ones a simulation has no value for are None.
    recorded = {key: None for key in resultset.RECORDED_SETTINGS}
    rs = resultset.ResultSet(
        **{
            **recorded,
            "LOCAL_HOST": "l4slab",
            "IP_VERSION": 4,
            "NOTE": "simulated by l4slab",
            "NAME": FLENT_TEST,
            "TITLE": str(name),
            "HOST": "l4slab",
            "HOSTS": ["l4slab"],
            "LENGTH": length,
            "TOTAL_LENGTH": length + 2 * delay,
            "STEP_SIZE": bin_s,
            "TIME": start,
            "TEST_PARAMETERS": {"upload_streams": str(len(up)), "download_streams": str(len(down))},
        }
    )
    rs.x_values = x_values
    t0 = start.timestamp()
    # The test's start, from which flent's aggregator counts its steps (naive UTC, as it records it).
    rs.meta("T0", start.replace(tzinfo=None))

    def measured(key: str, values: list[float | None]) -> None:
        """A measured series: its per-step values and, as flent's runners record them, its raw
        samples (``t`` absolute, ``val``); flent plots nothing from a file without raw values."""
        rs.add_result(key, values)
        rs.add_raw_values(
            key, [{"t": t0 + x, "val": v, "dur": bin_s} for x, v in zip(x_values, values, strict=True) if v is not None]
        )

    def per_flow(flow_id: int, column: str) -> list[float | None]:
        s = series[series["flow"] == flow_id].set_index("time_s")[column]
        return _finite(s.reindex(times).tolist())

    series_meta: dict[str, Any] = {}

    def add_group(kind: str, flows: list) -> None:
        columns = []
        for n, (f, c) in enumerate(flows, start=1):
            key = f"TCP {kind} BE::{n}"
            values = per_flow(f["id"], "goodput_mbps")
            measured(key, values)
            series_meta[key] = {"l4slab_flow": f["id"], "l4slab_label": f.get("label"), "cong_control": c.get("cc")}
            columns.append(values)
        if columns:
            rows = list(zip(*columns, strict=True))
            rs.add_result(f"TCP {kind} sum", [sum(v for v in r if v is not None) for r in rows])
            rs.add_result(
                f"TCP {kind} avg",
                [sum(v for v in r if v is not None) / max(1, sum(v is not None for v in r)) for r in rows],
            )

    add_group("upload", up)
    add_group("download", down)
    if up or down:
        ups = [per_flow(f["id"], "goodput_mbps") for f, _ in up + down]
        rs.add_result("TCP totals", [sum(v for v in r if v is not None) for r in zip(*ups, strict=True)])
    queue_ms = icmp_queue_ms(run).set_axis(run["bottleneck"]["time_s"]).reindex(times).fillna(0.0)
    first = (up or down or [(None, run["config"]["flows"][0])])[0][1]
    base_ms = float(first.get("rtt_ns", 0)) / 1e6
    ping = _finite((queue_ms + base_ms).tolist())
    measured("Ping (ms) ICMP", ping)
    udp = per_flow(up[0][0]["id"], "srtt_ms") if up else ping
    measured("Ping (ms) UDP BE", udp)
    rs.add_result(
        "Ping (ms) avg", [None if a is None or b is None else (a + b) / 2 for a, b in zip(ping, udp, strict=True)]
    )
    rs.metadata["SERIES_META"] = series_meta
    rs.metadata["L4SLAB_PING"] = (
        "ICMP: base RTT of the first flow + the bottleneck queueing a Not-ECT echo meets per bin "
        "(DualPI2: the C queue's sojourn; fq/fq_codel: none, a sparse flow; else the queue's sojourn); "
        "UDP BE: the first flow's sRTT"
    )
    target = Path(out) if out is not None else run["dir"] / f"{_safe(str(name))}.flent.gz"
    if not target.name.endswith(".flent.gz"):
        raise ScenarioError(f"--output: {target.name!r} must end in .flent.gz (flent finds its files by that suffix)")
    write_bytes(target, gzip.compress(rs.dumps().encode("utf-8"), mtime=0))
    return target


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80] or "run"


def to_iperf3_json(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write ``iperf3-flow<N>.json`` per TCP flow of ``run_dir`` (default: into it)."""
    run = read_run(run_dir)
    target = Path(out_dir) if out_dir is not None else run["dir"]
    series = run["flow_series"]
    bin_s = float(run["summary"]["bin_s"])
    written = []
    default_mss = None
    for f, c in _tcp_flows(run):
        if not c.get("mss") and default_mss is None:
            from .schema import tcp_flow_param

            default_mss = int(tcp_flow_param("mss").default)
        mss = c.get("mss") or default_mss
        rows = series[series["flow"] == f["id"]].sort_values("time_s")
        flow_start = float(f.get("start_s") or 0.0)
        # Bins that end after the flow started (iperf3's first interval starts with the flow).
        rows = rows[rows["time_s"] + bin_s > flow_start + 1e-12]
        intervals = []
        for _, r in rows.iterrows():
            start = max(0.0, float(r["time_s"]) - flow_start)
            bps = float(r["goodput_mbps"]) * 1e6
            srtt_us = None if not math.isfinite(float(r["srtt_ms"])) else int(round(float(r["srtt_ms"]) * 1000))
            stream = {
                "socket": 5,
                "start": start,
                "end": float(r["time_s"]) + bin_s - flow_start,
                "seconds": float(r["time_s"]) + bin_s - flow_start - start,
                "bytes": int(round(bps * bin_s / 8)),
                "bits_per_second": bps,
                "retransmits": int(r["retransmits"]),
                "snd_cwnd": int(float(r["cwnd"]) * mss) if math.isfinite(float(r["cwnd"])) else 0,
                "rtt": srtt_us or 0,
                "omitted": False,
                "sender": True,
            }
            intervals.append(
                {
                    "streams": [stream],
                    "sum": {
                        k: stream[k]
                        for k in (
                            "start",
                            "end",
                            "seconds",
                            "bytes",
                            "bits_per_second",
                            "retransmits",
                            "omitted",
                            "sender",
                        )
                    },
                }
            )
        srtts = [s["streams"][0]["rtt"] for s in intervals if s["streams"][0]["rtt"] > 0]
        duration = float(run["summary"]["duration_s"]) - float(f.get("start_s") or 0.0)
        received = {
            "start": 0,
            "end": duration,
            "seconds": duration,
            "bytes": int(f.get("bytes_delivered") or 0),
            "bits_per_second": float(f.get("goodput_mbps") or 0.0) * 1e6,
            "sender": True,
        }
        mean_srtt = f.get("mean_srtt_ms")
        sender = {
            **received,
            "retransmits": int(f.get("retransmits") or 0),
            "max_snd_cwnd": max((s["streams"][0]["snd_cwnd"] for s in intervals), default=0),
            "max_rtt": max(srtts, default=0),
            "min_rtt": min(srtts, default=0),
            "mean_rtt": int(round(mean_srtt * 1000))
            if isinstance(mean_srtt, (int, float)) and math.isfinite(mean_srtt)
            else 0,
        }
        doc = {
            "start": {
                "version": "l4slab (iperf3 -J compatible subset)",
                "test_start": {"protocol": "TCP", "num_streams": 1, "duration": int(round(duration)), "reverse": 0},
                "sock_bufsize": 0,
                "tcp_mss_default": mss,
                "congestion": c.get("cc"),
                "l4slab": {"flow": f["id"], "label": f.get("label")},
            },
            "intervals": intervals,
            "end": {
                "streams": [{"sender": sender, "receiver": received}],
                "sum_sent": {**received, "retransmits": sender["retransmits"]},
                "sum_received": received,
                "sender_tcp_congestion": c.get("cc"),
                "receiver_tcp_congestion": c.get("receiver_cc") or "cubic",
            },
        }
        path = target / f"iperf3-flow{f['id']}.json"
        write_bytes(path, (json.dumps(doc, indent=2, allow_nan=False) + "\n").encode("utf-8"))
        written.append(path)
    if not written:
        raise ScenarioError(f"{run['dir']}: no TCP flow to export (iperf3 JSON describes TCP streams)")
    return written
