"""Derived metrics of the studies, computed on pandas tables of finished runs.

Input conventions (docs/analysis.md):

* a **flows table** has one row per flow and run, with the columns of ``flows.parquet``
  (``goodput_mbps``, ``throughput_mbps``, ``mean_srtt_ms``, ``base_rtt_ms``, ``cc``,
  ``label``, ``final_cwnd``, ``drops``, ``marks``, ...) plus a **run key** column
  (``run`` argument, default ``"run_id"`` as in the study catalog) that tells the runs
  apart, and usually a **point key** (``"point"``) shared by the trials of one point;
* every function returns a new object and never modifies its input.

Shares and harm
    ``share`` = flow (or group) goodput / capacity. With ``capacity_mbps`` given (a number,
    or the name of a column such as ``rate_mbps``) the capacity is the link rate, as in
    PAM 2025 (share of the 100 Mbit/s bottleneck); with ``capacity_mbps=None`` it is the
    sum of the run's goodputs (shares then add up to 1).
    The fair share of a flow is ``1 / N`` (N flows in the run), of a group of ``n`` flows
    ``n / N``. PAM's two-flow rule ("harmed" below 20 % where 50 % is fair, "harmful"
    above 80 %) is generalised to ``harmed`` if ``share < 0.4 · fair``, ``harmful`` if
    ``share > 1.6 · fair``, else ``neutral`` (strict inequalities: exactly 20 % is neutral).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .. import schema

__all__ = [
    "PAM_CAPACITY_MBPS",
    "HARMED_FACTOR",
    "HARMFUL_FACTOR",
    "TESTBED_L4S_CCS",
    "l4s_congestion_controls",
    "harm_label",
    "harm_labels",
    "flow_class",
    "throughput_share",
    "fair_share",
    "add_harm",
    "group_harm",
    "group_ratio",
    "rate_ratio",
    "window_ratio",
    "jain_index",
    "jain_by_run",
    "utilisation",
    "probability",
    "add_probabilities",
    "srtt_queue_delay",
    "sojourn_stats",
    "ccdf",
    "ccdf_from_histogram",
    "t_quantile",
    "MeanCI",
    "mean_ci",
    "aggregate",
    "pam_cells",
]

#: Bottleneck rate of the PAM 2025 testbed (Mbit/s).
PAM_CAPACITY_MBPS = 100.0
#: ``harmed`` below this multiple of the fair share (PAM: 20 % of 50 %).
HARMED_FACTOR = 0.4
#: ``harmful`` above this multiple of the fair share (PAM: 80 % of 50 %).
HARMFUL_FACTOR = 1.6
#: L4S congestion controls of testbeds that the engine does not implement, as their results
#: name them (``bbrv2-l4s``; ``l4s`` as a generic label); :func:`l4s_congestion_controls` adds the engine's.
TESTBED_L4S_CCS = frozenset({"bbrv2-l4s", "l4s"})

Capacity = float | str | None


# --- harm ---------------------------------------------------------------------------------------


def harm_label(share: float, fair_share: float = 0.5) -> str | None:
    """``"harmed"``, ``"neutral"`` or ``"harmful"`` for a throughput ``share`` (fraction of
    capacity) against ``fair_share``; ``None`` when the share is NaN/None."""
    if share is None or fair_share is None or math.isnan(share) or math.isnan(fair_share):
        return None
    if share < HARMED_FACTOR * fair_share:
        return "harmed"
    if share > HARMFUL_FACTOR * fair_share:
        return "harmful"
    return "neutral"


def harm_labels(share: Iterable[float] | pd.Series, fair_share: float | Iterable[float] | pd.Series = 0.5) -> pd.Series:
    """Vectorised :func:`harm_label` (keeps the index of ``share`` when it is a Series)."""
    index = share.index if isinstance(share, pd.Series) else None
    shares = np.asarray(share, dtype=np.float64)
    fairs = np.broadcast_to(np.asarray(fair_share, dtype=np.float64), shares.shape)
    labels = [harm_label(float(s), float(f)) for s, f in zip(shares, fairs, strict=True)]
    return pd.Series(labels, index=index, dtype="object", name="harm")


def l4s_congestion_controls() -> frozenset[str]:
    """Congestion controls counted as L4S by :func:`flow_class`: the engine's (its schema's
    ``l4s`` flag: sends ECT(1), scalable response to CE) and :data:`TESTBED_L4S_CCS`."""
    engine = (name for name, spec in schema.engine_schema().congestion_controls.items() if spec.l4s)
    return frozenset(engine) | TESTBED_L4S_CCS


def flow_class(flows: pd.DataFrame, l4s_ccs: Iterable[str] | None = None, cc: str = "cc") -> pd.Series:
    """``"l4s"`` for flows whose congestion control is in ``l4s_ccs`` (default:
    :func:`l4s_congestion_controls`), else ``"classic"``."""
    l4s = l4s_congestion_controls() if l4s_ccs is None else set(l4s_ccs)
    is_l4s = flows[cc].astype(str).str.lower().isin(l4s)
    return pd.Series(np.where(is_l4s, "l4s", "classic"), index=flows.index, name="class")


def _capacity(flows: pd.DataFrame, capacity_mbps: Capacity, run: str, value: str) -> pd.Series:
    if capacity_mbps is None:
        return flows.groupby(run, sort=False)[value].transform("sum")
    if isinstance(capacity_mbps, str):
        return flows[capacity_mbps].astype(np.float64)
    return pd.Series(float(capacity_mbps), index=flows.index)


def throughput_share(
    flows: pd.DataFrame, *, run: str = "run_id", value: str = "goodput_mbps", capacity_mbps: Capacity = None
) -> pd.Series:
    """Each flow's ``value`` as a fraction of the capacity (see the module docstring)."""
    return (flows[value].astype(np.float64) / _capacity(flows, capacity_mbps, run, value)).rename("share")


def fair_share(flows: pd.DataFrame, *, run: str = "run_id") -> pd.Series:
    """``1 / N`` with N the number of flows of the flow's run."""
    return (1.0 / flows.groupby(run, sort=False)[run].transform("size")).rename("fair_share")


def add_harm(
    flows: pd.DataFrame, *, run: str = "run_id", value: str = "goodput_mbps", capacity_mbps: Capacity = None
) -> pd.DataFrame:
    """A copy of ``flows`` with columns ``share``, ``fair_share`` and ``harm`` per flow."""
    out = flows.copy()
    out["share"] = throughput_share(flows, run=run, value=value, capacity_mbps=capacity_mbps)
    out["fair_share"] = fair_share(flows, run=run)
    out["harm"] = harm_labels(out["share"], out["fair_share"])
    return out


def group_harm(
    flows: pd.DataFrame,
    group: str | pd.Series = "label",
    *,
    run: str = "run_id",
    value: str = "goodput_mbps",
    capacity_mbps: Capacity = None,
) -> pd.DataFrame:
    """Per run and flow group: ``n`` flows, ``total`` of ``value``, ``share``, ``fair_share``
    (= n / N) and ``harm``. ``group`` is a column name or a Series aligned with ``flows``
    (e.g. :func:`flow_class`); the result's group column is named ``group``."""
    frame = flows.assign(share=throughput_share(flows, run=run, value=value, capacity_mbps=capacity_mbps))
    frame["group"] = flows[group] if isinstance(group, str) else group
    frame["_n_run"] = frame.groupby(run, sort=False)[run].transform("size")
    out = frame.groupby([run, "group"], sort=False).agg(
        n=(value, "size"), total=(value, "sum"), share=("share", "sum"), n_run=("_n_run", "first")
    )
    out["fair_share"] = out["n"] / out["n_run"]
    out["harm"] = harm_labels(out["share"], out["fair_share"]).to_numpy()
    return out.drop(columns="n_run").reset_index()


# --- ratios and fairness ------------------------------------------------------------------------


def group_ratio(
    flows: pd.DataFrame,
    numerator: str,
    denominator: str,
    *,
    value: str = "goodput_mbps",
    group: str | pd.Series = "label",
    run: str = "run_id",
) -> pd.Series:
    """Per run: mean ``value`` per flow of group ``numerator`` / the same for ``denominator``.

    Per-flow means make N-vs-M mixes comparable (1 means equal per-flow rates); NaN when a
    group is absent from a run, inf when the denominator's mean is 0."""
    keys = flows[group] if isinstance(group, str) else group
    means = flows.groupby([flows[run], keys.rename("_group")], sort=False)[value].mean().unstack("_group")
    num = means[numerator] if numerator in means else pd.Series(np.nan, index=means.index)
    den = means[denominator] if denominator in means else pd.Series(np.nan, index=means.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (num.astype(np.float64) / den.astype(np.float64)).rename(f"{value}_ratio")


def rate_ratio(flows: pd.DataFrame, numerator: str = "l4s", denominator: str = "classic", **kwargs) -> pd.Series:
    """Goodput ratio between two groups (default L4S / classic by :func:`flow_class`)."""
    kwargs.setdefault("group", flow_class(flows))
    return group_ratio(flows, numerator, denominator, value="goodput_mbps", **kwargs).rename("rate_ratio")


def window_ratio(flows: pd.DataFrame, numerator: str = "l4s", denominator: str = "classic", **kwargs) -> pd.Series:
    """``final_cwnd`` ratio between two groups (default L4S / classic by :func:`flow_class`)."""
    kwargs.setdefault("group", flow_class(flows))
    return group_ratio(flows, numerator, denominator, value="final_cwnd", **kwargs).rename("window_ratio")


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index ``(Σx)² / (n·Σx²)``: 1 for equal values, 1/n for one hog of n.
    NaNs are ignored; NaN for no values, 1 when all are 0."""
    x = np.asarray(list(values) if not isinstance(values, (np.ndarray, pd.Series)) else values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan
    squares = float(np.sum(x * x))
    return 1.0 if squares == 0.0 else float(np.sum(x)) ** 2 / (x.size * squares)


def jain_by_run(flows: pd.DataFrame, *, run: str = "run_id", value: str = "goodput_mbps") -> pd.Series:
    """:func:`jain_index` of ``value`` over the flows of each run."""
    return flows.groupby(run, sort=False)[value].apply(jain_index).rename("jain_index")


def utilisation(
    flows: pd.DataFrame, capacity_mbps: float | str, *, run: str = "run_id", value: str = "throughput_mbps"
) -> pd.Series:
    """Per run: Σ ``value`` / capacity (``throughput_mbps`` counts L2 bytes, like the
    summary's ``bottleneck.utilisation``; ``goodput_mbps`` gives payload utilisation)."""
    total = flows.groupby(run, sort=False)[value].sum()
    if isinstance(capacity_mbps, str):
        capacity = flows.groupby(run, sort=False)[capacity_mbps].first().astype(np.float64)
    else:
        capacity = float(capacity_mbps)
    return (total / capacity).rename("utilisation")


# --- probabilities and queue delay --------------------------------------------------------------


def probability(events: float | np.ndarray | pd.Series, trials: float | np.ndarray | pd.Series):
    """``events / trials`` (e.g. marks / arrivals); NaN where ``trials`` is 0."""
    events_arr = np.asarray(events, dtype=np.float64)
    trials_arr = np.asarray(trials, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(trials_arr > 0, events_arr / np.where(trials_arr > 0, trials_arr, 1.0), np.nan)
    if isinstance(events, pd.Series):
        return pd.Series(result, index=events.index)
    return float(result) if result.ndim == 0 else result


def add_probabilities(frame: pd.DataFrame, trials: str = "arrivals") -> pd.DataFrame:
    """A copy with ``mark_prob`` = marks / ``trials`` and ``drop_prob`` = drops / ``trials``.

    ``trials="arrivals"`` for bottleneck tables and series; for a flows table use
    ``"packets_sent"`` (whole-run counts: the per-packet mark/drop rate of each flow)."""
    out = frame.copy()
    out["mark_prob"] = probability(frame["marks"], frame[trials])
    out["drop_prob"] = probability(frame["drops"], frame[trials])
    return out


def srtt_queue_delay(flows: pd.DataFrame) -> pd.Series:
    """The studies' "queuing delay": ``mean_srtt_ms − base_rtt_ms`` (ms, NaN without srtt)."""
    return (flows["mean_srtt_ms"].astype(np.float64) - flows["base_rtt_ms"].astype(np.float64)).rename(
        "queuing_delay_ms"
    )


_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p999": 0.999}


def _sojourn_row(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if values.size == 0:
        return {"count": 0, "mean": math.nan, **{k: math.nan for k in _QUANTILES}, "max": math.nan}
    quantiles = {name: float(np.quantile(values, q)) for name, q in _QUANTILES.items()}
    return {"count": int(values.size), "mean": float(values.mean()), **quantiles, "max": float(values.max())}


def sojourn_stats(
    trace: pd.DataFrame | Sequence[float] | np.ndarray, by: str | Sequence[str] | None = None, value: str = "sojourn_ms"
) -> pd.DataFrame:
    """Sojourn statistics (count, mean, p50, p90, p99, p999, max; ms) of a sojourn trace
    (``sojourn.parquet``) or of plain samples, optionally per ``by`` (e.g. ``"class"``)."""
    if not isinstance(trace, pd.DataFrame):
        return pd.DataFrame([_sojourn_row(np.asarray(trace, dtype=np.float64))])
    if by is None:
        return pd.DataFrame([_sojourn_row(trace[value].to_numpy(dtype=np.float64))])
    rows = []
    names = [by] if isinstance(by, str) else list(by)
    for key, group in trace.groupby(names, sort=True):
        ident = dict(zip(names, key, strict=True))
        rows.append({**ident, **_sojourn_row(group[value].to_numpy(dtype=np.float64))})
    return pd.DataFrame(rows)


def ccdf(samples: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CCDF: sorted samples ``x`` and ``P(X > x)`` (NaNs dropped; the last point,
    P = 0, is kept so callers on a log axis should mask it)."""
    x = np.sort(np.asarray(list(samples) if not isinstance(samples, (np.ndarray, pd.Series)) else samples, float))
    x = x[~np.isnan(x)]
    if x.size == 0:
        return x, x
    return x, 1.0 - np.arange(1, x.size + 1) / x.size


def ccdf_from_histogram(edges: Sequence[float], counts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """CCDF from a histogram: for each upper bin edge ``x``, the fraction of samples above it
    (samples assumed at most their bin's upper edge)."""
    counts_arr = np.asarray(counts, dtype=np.float64)
    total = counts_arr.sum()
    upper = np.asarray(edges, dtype=np.float64)[1:]
    if total <= 0:
        return upper, np.full(upper.shape, np.nan)
    return upper, 1.0 - np.cumsum(counts_arr) / total


# --- confidence intervals -----------------------------------------------------------------------


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t (scipy): ``t_quantile(0.975, 4)`` = 2.776."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile: need 0 < p < 1 and df > 0, got p={p}, df={df}")
    return float(stats.t.ppf(p, df))


@dataclass(frozen=True)
class MeanCI:
    """Mean of ``n`` samples with its Student-t confidence interval (``half`` = half-width)."""

    mean: float
    half: float
    n: int
    std: float

    @property
    def low(self) -> float:
        return self.mean - self.half

    @property
    def high(self) -> float:
        return self.mean + self.half


def mean_ci(values: Iterable[float], confidence: float = 0.95) -> MeanCI:
    """Mean and CI ``t((1+c)/2, n−1) · s / √n`` (sample std, NaNs dropped; half NaN if n < 2)."""
    x = np.asarray(list(values) if not isinstance(values, (np.ndarray, pd.Series)) else values, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    if n < 2:
        return MeanCI(mean, math.nan, n, math.nan)
    std = float(x.std(ddof=1))
    return MeanCI(mean, t_quantile(0.5 + confidence / 2.0, n - 1) * std / math.sqrt(n), n, std)


#: Numeric identity columns that :func:`aggregate` does not average.
ID_COLUMNS = frozenset({"id", "group", "flow", "trial", "seed", "wall_s"})


def aggregate(
    frame: pd.DataFrame,
    by: str | Sequence[str] = "point",
    *,
    columns: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean and confidence interval over the rows (trials) of each ``by`` group.

    One row per group: the ``by`` columns, ``n`` (rows in the group), and for every numeric
    column ``c`` (or only ``columns``; identity columns such as ``trial``/``seed``/``id``
    are skipped): ``c`` = mean, ``c_ci`` = half-width, ``c_std`` = sample std. NaNs are
    left out per column. To aggregate per flow, include the flow id in ``by``."""
    keys = [by] if isinstance(by, str) else list(by)
    if columns is None:
        columns = [
            name
            for name in frame.columns
            if name not in keys
            and name not in ID_COLUMNS
            and pd.api.types.is_numeric_dtype(frame[name])
            and not pd.api.types.is_bool_dtype(frame[name])
        ]
    rows = []
    for key, group in frame.groupby(keys, sort=True, dropna=False):
        row: dict[str, object] = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        row["n"] = len(group)
        for name in columns:
            stats = mean_ci(group[name].to_numpy(dtype=np.float64, na_value=np.nan), confidence)
            row.update({name: stats.mean, f"{name}_ci": stats.half, f"{name}_std": stats.std})
        rows.append(row)
    ordered = [*keys, "n", *[f"{c}{s}" for c in columns for s in ("", "_ci", "_std")]]
    return pd.DataFrame(rows, columns=ordered)


# --- PAM-style cells ----------------------------------------------------------------------------


def pam_cells(
    flows: pd.DataFrame,
    keys: Sequence[str] = ("queue", "buffer_bdp", "classic"),
    *,
    run: str = "run_id",
    classes: pd.Series | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The PAM table cells from a flows table: per run, the L4S and the classic group's total
    goodput (``l4s_mbps``, ``classic_mbps``) and mean queuing delay (``l4s_qdelay_ms``,
    ``classic_qdelay_ms``, sRTT − base RTT), then :func:`aggregate` over the trials of each
    ``keys`` cell (columns as in :func:`aggregate`, e.g. ``l4s_mbps`` and ``l4s_mbps_ci``).
    ``classes`` overrides :func:`flow_class` ("l4s"/"classic" per flow)."""
    keys = list(keys)
    frame = flows.assign(_class=flow_class(flows) if classes is None else classes, _qd=srtt_queue_delay(flows))
    per = frame.groupby([*keys, run, "_class"], sort=False).agg(mbps=("goodput_mbps", "sum"), qdelay_ms=("_qd", "mean"))
    wide = per.unstack("_class")
    wide.columns = [f"{cls}_{metric}" for metric, cls in wide.columns]
    for name in ("l4s_mbps", "classic_mbps", "l4s_qdelay_ms", "classic_qdelay_ms"):
        if name not in wide:
            wide[name] = np.nan
    wide = wide.reset_index()
    cols = ["l4s_mbps", "classic_mbps", "l4s_qdelay_ms", "classic_qdelay_ms"]
    return aggregate(wide, keys, columns=cols, confidence=confidence)
