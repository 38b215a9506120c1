"""The table ``l4slab run`` and ``l4slab emulate`` print for one run: flows, the bottleneck
line, the ``tc -s`` block, packet conservation and, for an emulated run, the emulator's own
error."""

from __future__ import annotations

from .common import fmt, stdout_console

#: Flows the terminal table shows, the first ones; a run of more (a many-flow study point,
#: the 512-flow benchmark) says how many it leaves out, each of them being in summary.json.
#: Drawing a table of 8000 rows takes tens of seconds and fills no screen.
MAX_TABLE_FLOWS = 64


def print_result(result, directory) -> None:
    """The summary table, the bottleneck line, the ``tc -s`` block and the packet count."""
    from rich.table import Table

    from ..results import tc_stats_lines

    summary = result.summary
    console = stdout_console(120)

    bottleneck = summary["bottleneck"]
    title = (
        f"{summary['scenario']}: {summary['duration_s']:g} s, seed {summary['seed']}, "
        f"htb {bottleneck['rate_mbps']:g}Mbit + {bottleneck['qdisc_config']}"
    )
    warmup = float(summary.get("warmup_s") or 0.0)
    if warmup > 0:
        # Say which numbers skip the warm-up (docs/outputs.md: the summary window is
        # [warmup, duration); flow drops/marks/retransmits count the whole run).
        title += f"; summary window {warmup:g}–{summary['duration_s']:g} s (after {warmup:g} s warm-up)"
    table = Table(title=title, title_justify="left")
    show_labels = any(flow.get("label") not in (None, flow["cc"]) for flow in summary["flows"])
    headers = ["flow", *(["label"] if show_labels else []), "cc", "base RTT ms", "goodput Mb/s", "mean srtt ms"]
    whole = " (whole run)" if warmup > 0 else ""
    headers += ["queuing ms", f"retrans{whole}", f"drops{whole}", f"marks{whole}"]
    for header in headers:
        table.add_column(header, justify="left" if header in ("label", "cc") else "right")
    shown = summary["flows"][:MAX_TABLE_FLOWS]
    for flow in shown:
        table.add_row(
            str(flow["id"]),
            *([str(flow.get("label"))] if show_labels else []),
            str(flow["cc"]),
            fmt(flow.get("base_rtt_ms")),
            fmt(flow["goodput_mbps"], 2),
            fmt(flow["mean_srtt_ms"]),
            fmt(flow["queuing_delay_ms"]),
            fmt(flow["retransmits"]),
            fmt(flow.get("drops")),
            fmt(flow.get("marks")),
        )
    if len(summary["flows"]) > len(shown):
        table.caption = f"the first {len(shown)} of {len(summary['flows'])} flows; every flow is in summary.json"
        table.caption_justify = "left"
    console.print(table)
    sojourn = bottleneck["sojourn_ms"]
    window = f" (window {warmup:g}–{summary['duration_s']:g} s)" if warmup > 0 else ""
    console.print(
        f"bottleneck{window}: utilisation {fmt(bottleneck['utilisation'], 3)}, sojourn mean/p50/p99 "
        f"{fmt(sojourn.get('mean'))}/{fmt(sojourn.get('p50'))}/{fmt(sojourn.get('p99'))} ms, "
        f"drops {bottleneck['drops']}, marks {bottleneck['marks']}; Jain index {fmt(summary['jain_index'], 3)}",
        soft_wrap=True,
    )
    for line in tc_stats_lines(bottleneck):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    if summary.get("links"):
        print_links(console, result)
    console.print(
        f"packets: {summary['packets_sent']} sent = {summary['packets_delivered']} delivered + "
        f"{summary['packets_dropped']} dropped + {summary['packets_in_flight']} in flight; "
        + (
            f"engine {result.wall_s:.3f} s wall"
            if summary.get("backend", "sim") == "sim"
            else f"{summary.get('backend')} run {result.wall_s:.1f} s wall"
        ),
        soft_wrap=True,
    )
    emulator = summary.get("emulator")
    if emulator is not None:
        console.print(emulator_line(emulator), soft_wrap=True, markup=False, highlight=False)
        order = {"sender_wake": 0, "receiver_wake": 1, "sender_timer": 2, "sender_busy": 3, "receiver_busy": 4}
        for flow, measured in (emulator.get("program_hosts") or {}).items():
            said = "; ".join(
                f"{knob.replace('_', ' ')} P50/P90/P99/max {fmt(q.get('p50'), 0)}/{fmt(q.get('p90'), 0)}/"
                f"{fmt(q.get('p99'), 0)}/{fmt(q.get('max'), 0)} µs"
                for knob, q in sorted(measured.items(), key=lambda item: order.get(item[0], 3))
            )
            console.print(f"flow {flow} program's host, latency: {said}", soft_wrap=True, markup=False)
    if directory is not None:
        console.print(f"wrote {directory}/summary.json and series (see docs/outputs.md)", soft_wrap=True)


def emulator_line(emulator) -> str:
    """The emulator's own error, printed under every emulated run."""
    return (
        f"emulator: departure error P50/P99/max {fmt(emulator.get('departure_error_p50_us'))}/"
        f"{fmt(emulator.get('departure_error_p99_us'))}/{fmt(emulator.get('departure_error_max_us'))} µs, "
        + (
            f"arrivals read P50/P99/max {fmt(emulator.get('arrival_late_p50_us'))}/"
            f"{fmt(emulator.get('arrival_late_p99_us'))}/{fmt(emulator.get('arrival_late_max_us'))} µs after the kernel's stamp, "
            if emulator.get("arrival_late_p50_us") is not None
            else ""
        )
        + f"CPU busy {fmt(emulator.get('cpu_busy_fraction'), 2)} (headroom {fmt(emulator.get('cpu_headroom'), 2)}), "
        f"kept up: {'yes' if emulator.get('kept_up') else 'no'}, kernel {emulator.get('kernel') or '?'}"
    )


def print_links(console, result) -> None:
    """The measured links side by side (the bottleneck, the reverse queue, a topology's hops)."""
    from rich.table import Table

    frame = result.links
    table = Table(title="links (summary window)", title_justify="left")
    table.add_column("")
    for name in frame["link"]:
        table.add_column(str(name), justify="right")
    for column in [c for c in frame.columns if c != "link"]:
        digits = 3 if column == "utilisation" else 2
        values = [str(v) if column == "qdisc" else fmt(v, digits) for v in frame[column]]
        table.add_row(column, *values)
    console.print(table)
