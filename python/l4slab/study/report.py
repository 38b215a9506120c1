"""``l4slab study report DIR``: figures, a Markdown summary and a self-contained HTML page of a study.

Every study gets the generic report: per-point tables of each flow's goodput, share and
queuing delay and of the bottleneck's utilisation and sojourn (mean ± 95 % CI over trials;
with fewer than :data:`MIN_TRIALS_FOR_CI` trials the mean and the trials' min–max, since a
t-interval from 2–4 samples is wider than the physical range), the sojourn per qdisc queue
(DualPI2's C and L), a bar chart per flow label, and for each point its time series (the
trials' lines, or their mean with a band clipped to the quantity's physical bounds),
linked from the tables. A study with a queue and a buffer factor gets the seed papers' figures:
per queue, each flow's goodput and queuing delay against the buffer, and the sojourn CCDF of
each of the qdisc's queues (DualPI2's L and C apart). Every figure and table follows the
factors' order in the study file (buffers 0.5, 1, 2, 4 BDP, not the order runs finished),
and one CC has one colour in every figure (:func:`l4slab.analysis.figures.cc_colours`).
A study shaped like PAM 2025 (queues × buffers with L4S and classic flows) gets the
"Adopt L4S here?" verdict (:mod:`l4slab.analysis.verdict`), which counts only the current
plan's runs and says "incomplete" until every point of a queue has its trials. The built-in
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
from ..io import remove_dead_temps, write_text
from . import registry, store
from .catalog import load
from .markdown import markdown_table

__all__ = ["report", "factor_order", "factor_orders", "MIN_TRIALS_FOR_CI", "MAX_SERIES_POINTS", "MAX_BAR_POINTS"]

#: Fewer trials than this: tables show mean (min–max) and figures the trials themselves.
MIN_TRIALS_FOR_CI = 5
#: Points shown with time series; the report says so when a study has more.
MAX_SERIES_POINTS = 24
#: Points in the goodput bar chart; the report says so when a study has more. The chart is
#: as wide as its points: the whole PAM 2025 study (999 points) made a 270-Mpixel PNG that
#: image readers refuse as a decompression bomb, and took 90 of a report's 370 s to draw.
MAX_BAR_POINTS = 120

#: Combinations of the factors other than queue and buffer drawn in the per-queue figures;
#: the report says so when a study has more (the tables hold them all).
MAX_QUEUE_FIGURE_SETS = 6

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


def _factor_columns(runs: pd.DataFrame, plan: dict | None = None) -> list[str]:
    """The plan's factor columns (in the study file's order); without a plan every column of
    ``runs`` that is not an identity column or a typed twin (``_bdp``, ``_bps``)."""
    planned = [f.get("column") for f in (plan or {}).get("factors") or [] if isinstance(f, dict)]
    planned = [c for c in planned if isinstance(c, str) and c in runs]
    if planned:
        return planned
    fixed = {"run_id", "point", "trial", "seed", "status", "wall_s", "error", "in_plan"}
    return [c for c in runs.columns if c not in fixed and not c.endswith(store.TYPED_SUFFIXES)]


def _table_value(value: object) -> object:
    """A factor value as the catalog's tables hold it (text, number, JSON text; None as "–")."""
    if value is None:
        return "–"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    import json

    return json.dumps(value)


def factor_order(data, column: str) -> list:
    """One factor's values in the study file's order, for a built-in study's report section
    (``data`` is :func:`l4slab.study.load`'s result)."""
    plan = store.load_plan(data.directory) or {}
    return factor_orders(plan, data.runs, [column])[column]


def factor_orders(plan: dict, frame: pd.DataFrame, factors: list[str]) -> dict[str, list]:
    """Column → its values in the study file's order (the order of every figure and table),
    then any value the tables hold that the plan does not (sorted)."""
    planned = {f.get("column"): f.get("values") or [] for f in plan.get("factors") or [] if isinstance(f, dict)}
    orders = {}
    for column in factors:
        values = list(dict.fromkeys(_table_value(v) for v in planned.get(column, [])))
        if column in frame:
            extra = [v for v in dict.fromkeys(frame[column].tolist()) if v not in values]
            values += sorted(extra, key=str)
        orders[column] = values
    return orders


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
    data = load(directory).current()  # the runs of the current plan only
    out = directory / "report"
    out.mkdir(exist_ok=True)
    remove_dead_temps(out)  # figures and pages of a report killed mid-write
    plan = store.load_plan(directory) or {}
    name, description = _describe(directory, plan)
    factors = _factor_columns(data.runs, plan)
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

    orders = factor_orders(plan, runs, factors)
    colours = figures.cc_colours(flows["cc"].astype(str))
    body += verdict.verdict_section(flows, factors, paths, runs=runs, plan=plan)
    body += _queue_figures(data, flows, factors, paths, orders, colours, out)
    body += _flow_table(flows, factors, short)
    body += _bottleneck_tables(data, runs, factors, short)
    body += _bars(flows, factors, short, out, colours)
    body += _time_series_section(data, runs, factors, short, out, colours)
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


def _buffer_labels(values: list) -> tuple[list[str], str]:
    """Buffer factor values as numbers of BDPs (``"0.5bdp"`` → ``0.5``) for the x axis."""
    from ..analysis.published import normalise_buffer

    labels = []
    for value in values:
        try:
            labels.append(f"{normalise_buffer(value):g}")
        except (TypeError, ValueError):
            return [str(v) for v in values], "buffer"
    return labels, "buffer (× BDP)"


def _combos(frame: pd.DataFrame, others: list[str], orders: dict[str, list]) -> list[tuple]:
    """The combinations of ``others`` present in ``frame``, in the factors' order."""
    if not others:
        return [()]
    present = frame[others].drop_duplicates().itertuples(index=False, name=None)
    rank = {f: {v: k for k, v in enumerate(orders[f])} for f in others}
    return sorted(present, key=lambda combo: [rank[f].get(v, len(rank[f])) for f, v in zip(others, combo)])


def _queue_figures(data, flows: pd.DataFrame, factors: list[str], paths: dict[str, str], orders: dict[str, list],
                   colours: dict[str, str], out: Path) -> list[str]:  # fmt: skip
    """The seed papers' figures for a study with a queue and a buffer factor: per queue, each
    flow's goodput and queuing delay against the buffer, and the sojourn CCDF of each of the
    qdisc's queues (DualPI2's L and C apart) per queue and buffer."""
    queue = verdict.find_factor(factors, paths, "qdisc")
    buffer = verdict.find_factor(factors, paths, "buffer")
    if queue is None or buffer is None:
        return []
    others = [f for f in factors if f not in (queue, buffer)]
    x_labels, xlabel = _buffer_labels(orders[buffer])
    several = flows.groupby(flows["label"].astype(str))["cc"].nunique().gt(1)
    line = flows["label"].astype(str).map(mpl_text)
    line = line.where(~flows["label"].astype(str).map(several).fillna(False), line + " (" + flows["cc"].astype(str) + ")")
    flows = flows.assign(_line=line)
    line_order = list(dict.fromkeys(flows.sort_values(["id"], kind="stable")["_line"]))
    cc_of = _cc_of(flows, "_line")
    combos = _combos(flows, others, orders)
    lines = [
        "## Per queue: goodput, queuing delay and sojourn against the buffer",
        "",
        "One panel per queue, the buffer on the x axis in the study's order; each flow's mean over trials with "
        f"its 95 % CI from {MIN_TRIALS_FOR_CI} trials on (clipped at 0), else the trials' min–max. Colours are "
        "the congestion controls', the same in every figure of this report. The sojourn CCDFs are drawn "
        "from each run's sojourn quantiles (p50, p90, p99, p99.9, max; median over trials), one line per queue "
        "of the qdisc: DualPI2's L and C apart.",
        "",
    ]
    if len(combos) > MAX_QUEUE_FIGURE_SETS:
        lines += [f"Figures of the first {MAX_QUEUE_FIGURE_SETS} of {len(combos)} combinations of "
                  f"{', '.join(f'`{md_text(paths[f])}`' for f in others)}; the tables below hold them all.", ""]  # fmt: skip
    classes = data.classes
    for k, combo in enumerate(combos[:MAX_QUEUE_FIGURE_SETS]):
        where = " · ".join(f"{paths[f].split('.')[-1]}={v}" for f, v in zip(others, combo, strict=True))
        part = flows
        cells = classes
        for f, v in zip(others, combo, strict=True):
            part = part[part[f] == v]
            cells = cells[cells[f] == v] if f in cells else cells
        if part.empty:
            continue
        n_flows = part.groupby("run_id").size()
        rate = part.groupby("run_id")["rate_mbps"].first() if "rate_mbps" in part else pd.Series(dtype=float)
        fair = None
        if n_flows.nunique() == 1 and rate.nunique() == 1:
            fair = float(rate.iloc[0]) / int(n_flows.iloc[0])
        suffix = f" ({mpl_text(where)})" if where else ""
        stem = f"queue_set{k}"
        common = dict(facet=queue, x=buffer, line="_line", x_order=orders[buffer], facet_order=orders[queue],
                      line_order=line_order, colours=colours, cc_of=cc_of, x_labels=x_labels, lower=0.0,
                      min_trials=MIN_TRIALS_FOR_CI, xlabel=xlabel)  # fmt: skip
        fig = figures.factor_lines(part, value="goodput_mbps", ylabel="goodput (Mbit/s)", reference=fair,
                                   reference_label="fair share", title=f"Goodput per queue{suffix}", **common)  # fmt: skip
        figures.save(fig, out / f"{stem}_goodput")
        fig = figures.factor_lines(part, value="queuing_delay_ms", ylabel="queuing delay (ms)",
                                   title=f"Queuing delay (sRTT − base RTT) per queue{suffix}", **common)  # fmt: skip
        figures.save(fig, out / f"{stem}_delay")
        row = [f"![goodput per queue against buffer]({stem}_goodput.png)",
               f"![queuing delay per queue against buffer]({stem}_delay.png)"]  # fmt: skip
        if not cells.empty and "class" in cells and {queue, buffer} <= set(cells.columns):
            fig = figures.quantile_ccdf_grid(cells, row=queue, col=buffer, row_order=orders[queue],
                                             col_order=orders[buffer], col_labels=x_labels,
                                             col_title="buffer " if xlabel == "buffer" else "buffer × BDP = ",
                                             title=f"Sojourn CCDF per queue{suffix}")  # fmt: skip
            figures.save(fig, out / f"{stem}_ccdf")
            row.append(f"![sojourn CCDF per queue]({stem}_ccdf.png)")
        if where:
            lines += [f"### {md_text(where)}", ""]
        lines += [" ".join(row), ""]
    return lines


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


def _cc_of(flows: pd.DataFrame, key: str) -> dict[str, str]:
    """A flow name (label) → its CC, for the colours; the first CC where a label has several."""
    pairs = flows[[key, "cc"]].astype(str).drop_duplicates(key)
    return dict(zip(pairs[key], pairs["cc"], strict=True))


def _bars(flows: pd.DataFrame, factors: list[str], short: dict[str, str], out: Path, colours=None) -> list[str]:
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
    names = _point_names(flows, factors, short).map(mpl_text)
    frame = flows.assign(point_name=names, label=flows["label"].astype(str).map(mpl_text))
    order = list(dict.fromkeys(frame.sort_values("point")["point_name"]))  # points are in factor order
    fig = figures.flow_bars(
        frame[["point_name", "label", "goodput_mbps", "cc"]],
        x="point_name",
        value="goodput_mbps",
        hue="label",
        order=order,
        hue_order=list(dict.fromkeys(frame.sort_values("id", kind="stable")["label"])),  # flows in scenario order
        colours=colours,
        cc_of=_cc_of(frame, "label"),
        ylabel="goodput (Mbit/s)",
        title=f"Goodput per point (mean; 95 % CI from {MIN_TRIALS_FOR_CI} trials, else min–max)",
        wrap=22,
    )
    figures.save(fig, out / "goodput")
    return lines + ["![goodput per point](goodput.png)", ""]


def _queue_series(bs: pd.DataFrame, class_names: list[str]) -> tuple[pd.DataFrame, str | None]:
    """The bottleneck's sojourn per sub-queue (``sojourn_<class>_ms``, DualPI2's L and C) in
    long form with a ``queue`` column, so that the L queue is not averaged into C; the
    bottleneck's mean sojourn (group None) for a single-queue qdisc."""
    from ..results import class_sojourn_column

    columns = {class_sojourn_column(n): n for n in class_names}
    columns = {c: n for c, n in columns.items() if c in bs and bs[c].notna().any()}
    if len(columns) < 2:
        return bs, None
    keep = [c for c in ("time_s", "run_label", "run_id") if c in bs]
    long = bs[[*keep, *columns]].melt(id_vars=keep, value_vars=list(columns), var_name="queue", value_name="sojourn_ms")
    long["queue"] = long["queue"].map(columns)
    return long.dropna(subset=["sojourn_ms"]), "queue"


def _time_series_section(
    data, runs: pd.DataFrame, factors: list[str], short: dict[str, str], out: Path, colours=None
) -> list[str]:
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
        flow_cc = _cc_of(flows[flows["run_id"].isin(ids)].assign(flow_name=lambda f: f["flow_name"].map(mpl_text)),
                         "flow_name")  # fmt: skip
        stem = f"series_point{int(point)}"
        row = []
        class_names = data.classes[data.classes["run_id"].isin(ids)]["class"] if "class" in data.classes else []
        queues, queue_group = _queue_series(bs, [str(n) for n in dict.fromkeys(class_names)])
        panels = [
            ("goodput_mbps", "goodput (Mbit/s)", fs, "flow_name"),
            ("srtt_ms", "sRTT (ms)", fs, "flow_name"),
            ("cwnd", "cwnd (packets)", fs, "flow_name"),
            ("sojourn_ms", "sojourn per queue (ms)" if queue_group else "bottleneck sojourn (ms)", queues, queue_group),
        ]
        # The CC's model state, for CCs that report one (BBR): bandwidth estimate.
        if "bw_est_mbps" in fs and fs["bw_est_mbps"].notna().any():
            with_state = fs[fs["bw_est_mbps"].notna()]  # only the flows whose CC has one
            panels.append(("bw_est_mbps", "bandwidth estimate (Mbit/s)", with_state, "flow_name"))
        for value, ylabel, frame, grp in panels:
            if value not in frame:
                continue
            by_flow = grp == "flow_name"
            fig = figures.time_series(
                frame,
                value=value,
                group=grp,
                ylabel=ylabel,
                title=mpl_text(title),
                legend_title="flow" if by_flow else "queue",
                trial="run_label",
                min_trials_for_band=MIN_TRIALS_FOR_CI,
                lower=0.0,
                colours=colours if by_flow else figures.QUEUE_COLOURS,
                cc_of=flow_cc if by_flow else None,
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
