"""``l4slab study report DIR``: figures, a Markdown summary and a self-contained HTML page of a study.

Every study gets the generic report: per-point tables of each flow's goodput, share and
queuing delay and of the bottleneck's utilisation and sojourn (mean ± 95 % CI over trials;
with fewer than :data:`MIN_TRIALS_FOR_CI` trials the mean and the trials' min–max, since a
t-interval from 2–4 samples is wider than the physical range), the sojourn per qdisc queue
(DualPI2's C and L), a bar chart per flow label, and for each point its time series (the
trials' lines, or their mean with a band clipped to the quantity's physical bounds),
linked from the tables. A study shaped like PAM 2025 (queues × buffers with L4S and classic
flows) gets the "Adopt L4S here?" verdict (:mod:`l4slab.analysis.verdict`). The built-in
study named by the plan's ``report`` (``[study] report``, by default the study itself when it
is built in) adds its own sections after the header (:mod:`.registry`).

``report.md`` and ``report.html`` are written from the same Markdown; every user-written
text (study name, labels, factor values) is escaped for Markdown, HTML and matplotlib
(:mod:`l4slab.analysis.html`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis import figures, metrics, verdict
from ..analysis.html import html_page, markdown_to_html, md_text, mpl_text
from ..analysis.published import published_section
from ..io import write_text
from . import registry, store
from .catalog import load
from .markdown import markdown_table

__all__ = ["report", "MIN_TRIALS_FOR_CI", "MAX_SERIES_POINTS", "MAX_BAR_POINTS"]

#: Fewer trials than this: tables show mean (min–max) and figures the trials themselves.
MIN_TRIALS_FOR_CI = 5
#: Points shown with time series; the report says so when a study has more.
MAX_SERIES_POINTS = 24
#: Points in the goodput bar chart; the report says so when a study has more. The chart is
#: as wide as its points: the whole PAM 2025 study (999 points) made a 270-Mpixel PNG that
#: image readers refuse as a decompression bomb, and took 90 of a report's 370 s to draw.
MAX_BAR_POINTS = 120

#: Bottleneck columns of the tables, with their headers (name and unit) and decimals.
BOTTLENECK_COLUMNS = {
    "utilisation": ("utilisation (fraction of rate)", 3),
    "jain_index": ("Jain index", 3),
    "sojourn_mean_ms": ("sojourn mean (ms)", 2),
    "sojourn_p99_ms": ("sojourn p99 (ms)", 2),
    "drops": ("drops (packets)", 0),
    "marks": ("CE marks (packets)", 0),
}
#: Per-queue sojourn columns (``classes`` table): DualPI2's C and L, or "all".
CLASS_COLUMNS = {"mean_ms": ("sojourn mean (ms)", 2), "p99_ms": ("sojourn p99 (ms)", 2), "count": ("packets", 0)}


def _factor_columns(runs: pd.DataFrame) -> list[str]:
    fixed = {"run_id", "point", "trial", "seed", "status", "wall_s", "error", "in_plan"}
    return [c for c in runs.columns if c not in fixed]


def _label(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _fill_factors(frame: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    frame = frame.copy()
    for column in factors:
        if column in frame and frame[column].isna().any():
            frame[column] = [("–" if pd.isna(v) else _label(v)) for v in frame[column]]
    return frame


def _factor_names(plan: dict, factors: list[str]) -> dict[str, str]:
    """Column → the factor's path as written in the study file (``flows.1.ecn``)."""
    names = {f.get("column"): f.get("path") for f in plan.get("factors") or [] if isinstance(f, dict)}
    return {c: str(names.get(c) or c) for c in factors}


def _short_names(paths: dict[str, str]) -> dict[str, str]:
    """The last component of each factor path (``ecn``, ``buffer``), longer where two would clash."""
    short = {c: p.split(".")[-1] for c, p in paths.items()}
    if len(set(short.values())) < len(short):
        return dict(paths)
    return short


def _describe(directory: Path, plan: dict) -> tuple[str, str | None]:
    """The study's name and description: ``[study] description`` of its study file, else the
    comment block that opens the file."""
    name = str(plan.get("study") or directory.name)
    path = directory / "study.toml"
    if not path.is_file():
        return name, None
    text = path.read_text(encoding="utf-8")
    try:
        from ..scenario.load import tomllib

        data = tomllib.loads(text)
    except ValueError:  # tomllib.TOMLDecodeError
        data = None
    if data and isinstance(data.get("study"), dict) and isinstance(data["study"].get("description"), str):
        return name, " ".join(data["study"]["description"].split())
    comments = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        comments.append(line.lstrip("#").strip())
    return name, " ".join(c for c in comments if c) or None


def _stat_cell(values: np.ndarray, digits: int, scale: float = 1.0, unit: str = "") -> str:
    """``mean ± CI`` (≥ MIN_TRIALS_FOR_CI trials), ``mean (min–max)`` (2–4), ``mean`` (1), ``–`` (none)."""
    values = values[~np.isnan(values)] * scale
    if values.size == 0:
        return "–"
    stats = metrics.mean_ci(values)
    if values.size >= MIN_TRIALS_FOR_CI:
        text = f"{stats.mean:.{digits}f} ± {stats.half:.{digits}f}"
    elif values.size > 1:
        text = f"{stats.mean:.{digits}f} ({values.min():.{digits}f}–{values.max():.{digits}f})"
    else:
        text = f"{stats.mean:.{digits}f}"
    return text + unit


def _point_link(point: object) -> str:
    return f"[{int(point)}](#point-{int(point)})"


def _flow_names(flows: pd.DataFrame) -> pd.Series:
    """A flow's name in legends: its label, with ``#id`` where a run has several of that label."""
    dup = flows.duplicated(["run_id", "label"], keep=False)
    return flows["label"].astype(str).where(~dup, flows["label"].astype(str) + " #" + flows["id"].astype(str))


def report(directory: str | os.PathLike[str], published: str | os.PathLike[str] | None = None) -> Path:
    """Write ``DIR/report/report.md`` and ``DIR/report/report.html`` with their figures;
    returns the Markdown path. ``published``: a published table
    (:mod:`l4slab.analysis.published`) put beside the simulated cells of every panel it covers."""
    directory = Path(directory)
    data = load(directory)
    out = directory / "report"
    out.mkdir(exist_ok=True)
    plan = store.load_plan(directory) or {}
    name, description = _describe(directory, plan)
    factors = _factor_columns(data.runs)
    # A study with panels leaves a panel's missing factors empty: show them as "–" so that
    # grouping keeps those rows.
    for table in ("runs", "flows", "bottleneck", "classes"):
        setattr(data, table, _fill_factors(getattr(data, table), factors))
    runs = data.runs
    paths = _factor_names(plan, factors)
    short = _short_names(paths)
    done = runs[runs["status"] == "done"] if "status" in runs else runs
    body = [
        f"{len(done)} of {len(runs)} runs done; factors: "
        + (", ".join(f"`{md_text(paths[f])}`" for f in factors) or "(none)")
        + f". Tables: mean ± 95 % CI over trials (Student t); with fewer than {MIN_TRIALS_FOR_CI} trials, "
        "the mean and the trials' (min–max). The point number links to the point's time series.",
        "",
    ]
    if published is not None:
        body += published_section(data, out, published, plan.get("study"))
    data.published = published  # a built-in section may skip its own comparison then
    for section in registry.report_sections(plan.get("report")):
        body += section(data, out)
    if data.flows.empty or done.empty:
        body += ["No finished run yet: nothing to tabulate.", ""]
        return _write(out, name, description, body)

    flows = data.flows  # every catalog table carries run_id, point, the factors and trial
    flows = flows.assign(queuing_delay_ms=metrics.srtt_queue_delay(flows))
    if "rate_mbps" in data.bottleneck:
        flows = flows.merge(data.bottleneck[["run_id", "rate_mbps"]], on="run_id", how="left")
        flows = metrics.add_harm(flows, capacity_mbps="rate_mbps")
    else:
        flows = metrics.add_harm(flows)

    body += verdict.verdict_section(flows, factors, paths)
    body += _flow_table(flows, factors, short)
    body += _bottleneck_tables(data, runs, factors, short)
    body += _bars(flows, factors, short, out)
    body += _time_series_section(data, runs, factors, short, out)
    return _write(out, name, description, body)


def _write(out: Path, name: str, description: str | None, body: list[str]) -> Path:
    head = [f"# {md_text(name)}", ""]
    if description:
        head += [md_text(description), ""]
    path = out / "report.md"
    write_text(path, "\n".join(head + body) + "\n")
    page = html_page(name, markdown_to_html("\n".join(body), out), description)
    write_text(out / "report.html", page)
    return path


def _point_frame(frame: pd.DataFrame, keys: list[str], factors: list[str], short: dict[str, str]) -> pd.DataFrame:
    table = pd.DataFrame({"point": [_point_link(p) for p in frame["point"]]})
    for f in factors:
        table[short[f]] = [md_text(v) for v in frame[f]]
    for k in keys:
        if k not in ("point", *factors):
            table[k] = [md_text(v) for v in frame[k]]
    return table


def _flow_table(flows: pd.DataFrame, factors: list[str], short: dict[str, str]) -> list[str]:
    keys = ["point", *factors, "label"]
    rows = []
    for key, group in flows.groupby(keys, sort=True, dropna=False):
        row = dict(zip(keys, key, strict=True))

        def col(c: str, group: pd.DataFrame = group) -> np.ndarray:
            return group[c].to_numpy(dtype=np.float64, na_value=np.nan)

        share = metrics.mean_ci(col("share")).mean
        row.update(
            {
                "share of link": _stat_cell(col("share"), 1, 100.0, " %"),
                "harm": metrics.harm_label(share, float(np.nanmean(col("fair_share")))) or "–",
                "goodput (Mbit/s)": _stat_cell(col("goodput_mbps"), 2),
                "queuing delay (ms)": _stat_cell(col("queuing_delay_ms"), 2),
                "retransmits (packets)": _stat_cell(col("retransmits"), 0),
                "n": len(group),
            }
        )
        rows.append(row)
    frame = pd.DataFrame(rows)
    table = _point_frame(frame, keys, factors, short)
    for c in ("share of link", "harm", "goodput (Mbit/s)", "queuing delay (ms)", "retransmits (packets)", "n"):
        table[c] = frame[c].to_numpy()
    return ["## Flows", "", markdown_table(table), ""]


def _bottleneck_tables(data, runs: pd.DataFrame, factors: list[str], short: dict[str, str]) -> list[str]:
    lines: list[str] = []
    bottleneck = data.bottleneck
    columns = [c for c in BOTTLENECK_COLUMNS if c in bottleneck]
    if columns:
        keys = ["point", *factors]
        rows = []
        for key, group in bottleneck.groupby(keys, sort=True, dropna=False):
            row = dict(zip(keys, key, strict=True))
            for c in columns:
                header, digits = BOTTLENECK_COLUMNS[c]
                row[header] = _stat_cell(group[c].to_numpy(dtype=np.float64, na_value=np.nan), digits)
            row["n"] = len(group)
            rows.append(row)
        frame = pd.DataFrame(rows)
        table = _point_frame(frame, keys, factors, short)
        for c in frame.columns:
            if c not in keys:
                table[c] = frame[c].to_numpy()
        lines += ["## Bottleneck", "", markdown_table(table), ""]
    classes = data.classes
    if not classes.empty and "class" in classes:
        keys = ["point", *factors, "class"]
        rows = []
        for key, group in classes.groupby(keys, sort=True, dropna=False):
            row = dict(zip(keys, key, strict=True))
            for c, (header, digits) in CLASS_COLUMNS.items():
                if c in group:
                    row[header] = _stat_cell(group[c].to_numpy(dtype=np.float64, na_value=np.nan), digits)
            rows.append(row)
        frame = pd.DataFrame(rows)
        table = _point_frame(frame, ["point", *factors], factors, short)
        table.insert(1 + len(factors), "queue", [md_text(c) for c in frame["class"]])
        for c in frame.columns:
            if c not in keys:
                table[c] = frame[c].to_numpy()
        lines += [
            "## Sojourn per qdisc queue",
            "",
            "DualPI2's classic and L4S queues are C and L (as in `tc -s qdisc`); single-queue qdiscs have one "
            "queue, all.",
            "",
            markdown_table(table),
            "",
        ]
    return lines


def _point_names(frame: pd.DataFrame, factors: list[str], short: dict[str, str]) -> pd.Series:
    """``qdisc=dualpi2 · ecn=0``: each factor's short name with its value (not "dualpi2 0")."""
    if not factors:
        return frame["point"].map(lambda p: f"point {p}")
    return frame[factors].apply(lambda r: " · ".join(f"{short[f]}={r[f]}" for f in factors), axis=1)


def _bars(flows: pd.DataFrame, factors: list[str], short: dict[str, str], out: Path) -> list[str]:
    if not factors:
        return []
    lines = ["## Goodput per point", ""]
    points = sorted(flows["point"].unique())
    if len(points) > MAX_BAR_POINTS:
        flows = flows[flows["point"].isin(points[:MAX_BAR_POINTS])]
        lines += [
            f"Bars of the first {MAX_BAR_POINTS} of {len(points)} points; the others are in the tables above.",
            "",
        ]
    names = _point_names(flows, factors, short).str.replace(" · ", "\n", regex=False)
    frame = flows.assign(point_name=names.map(mpl_text), label=flows["label"].astype(str).map(mpl_text))
    fig = figures.flow_bars(
        frame[["point_name", "label", "goodput_mbps"]],
        x="point_name",
        value="goodput_mbps",
        hue="label",
        ylabel="goodput (Mbit/s)",
        title="Goodput per point (mean, 95 % CI over trials)",
    )
    # One "factor=value" per line under each bar; width for the longest line, height for the lines.
    longest = max((len(part) for n in frame["point_name"] for part in str(n).split("\n")), default=0)
    n_points = frame["point_name"].nunique()
    fig.set_size_inches(max(fig.get_figwidth(), 0.09 * longest * n_points + 2.0), 3.6 + 0.2 * len(factors))
    figures.save(fig, out / "goodput")
    return lines + ["![goodput per point](goodput.png)", ""]


def _time_series_section(data, runs: pd.DataFrame, factors: list[str], short: dict[str, str], out: Path) -> list[str]:
    """For each point: goodput, sRTT and cwnd per flow and the bottleneck's sojourn over time."""
    done = runs[runs["status"] == "done"] if "status" in runs else runs
    if done.empty:
        return []
    lines = ["## Time series per point", ""]
    flows = data.flows.assign(flow_name=_flow_names(data.flows))
    names = flows[["run_id", "id", "flow_name"]].rename(columns={"id": "flow"})
    points = list(done.groupby("point", sort=True))
    if len(points) > MAX_SERIES_POINTS:
        lines += [
            f"Time series of the first {MAX_SERIES_POINTS} of {len(points)} points; the others are in the "
            "tables above, and their series in the catalog (`l4slab query DIR`, views flow_series and "
            "bottleneck_series).",
            "",
        ]
    for point, group in points[:MAX_SERIES_POINTS]:
        title = _point_names(group.head(1), factors, short).iloc[0]
        ids = group["run_id"].tolist()
        trials = group.assign(run_label="trial " + group["trial"].astype(str))[["run_id", "run_label"]]
        fs = data.series("flow_series", ids).merge(names, on=["run_id", "flow"], how="left").merge(trials, on="run_id")
        bs = data.series("bottleneck_series", ids).merge(trials, on="run_id")
        fs["flow_name"] = fs["flow_name"].astype(str).map(mpl_text)
        stem = f"series_point{int(point)}"
        row = []
        panels = [
            ("goodput_mbps", "goodput (Mbit/s)", fs, "flow_name"),
            ("srtt_ms", "sRTT (ms)", fs, "flow_name"),
            ("cwnd", "cwnd (packets)", fs, "flow_name"),
            ("sojourn_ms", "bottleneck sojourn (ms)", bs, None),
        ]
        # The CC's model state, for CCs that report one (BBR): bandwidth estimate.
        if "bw_est_mbps" in fs and fs["bw_est_mbps"].notna().any():
            with_state = fs[fs["bw_est_mbps"].notna()]  # only the flows whose CC has one
            panels.append(("bw_est_mbps", "bandwidth estimate (Mbit/s)", with_state, "flow_name"))
        for value, ylabel, frame, grp in panels:
            if value not in frame:
                continue
            fig = figures.time_series(
                frame,
                value=value,
                group=grp,
                ylabel=ylabel,
                title=mpl_text(title),
                legend_title="flow",
                trial="run_label",
                min_trials_for_band=MIN_TRIALS_FOR_CI,
                lower=0.0,
            )
            figures.save(fig, out / f"{stem}_{value}")
            row.append(f"![{value} over time]({stem}_{value}.png)")
        if "cc_mode" in fs and (fs["cc_mode"].astype(str) != "").any():
            fig = figures.cc_mode_timeline(fs, group="flow_name", title=f"{mpl_text(title)}: CC mode")
            figures.save(fig, out / f"{stem}_cc_mode")
            row.append(f"![cc_mode]({stem}_cc_mode.png)")
        runs_text = "; ".join(
            f"trial {int(r.trial)}: seed {int(r.seed)}, run `{str(r.run_id)[:12]}`" for r in group.itertuples()
        )
        lines += [
            f'<a id="point-{int(point)}"></a>',
            "",
            f"### Point {int(point)}: {md_text(title)}",
            "",
            f"Runs: {runs_text}.",
            "",
            " ".join(row),
            "",
        ]
    return lines
