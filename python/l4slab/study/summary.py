"""Per-point summaries over trials: mean and 95 % confidence interval (Student t).

For every point, every numeric per-flow metric (grouped by flow id) and every numeric
bottleneck/run metric gets one row of the long table ``summaries``:

``point, <factor columns>, scope ('flow' | 'bottleneck'), flow, label, cc, metric,
n, mean, std, ci95_low, ci95_high, ci95_half``

``ci95_half = t(0.975, n-1) · std / sqrt(n)`` (sample standard deviation; NaN when
n < 2). NaN samples (e.g. the srtt of a UDP flow) are left out of ``n``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .. import schema
from ..analysis.metrics import t_quantile
from ..errors import ScenarioError

__all__ = ["t_quantile", "summarise", "check_metrics", "known_metrics", "DERIVED_BOTTLENECK_METRICS"]

#: Columns of the catalog's ``bottleneck`` table that l4slab derives from a run's summary
#: (:func:`l4slab.study.store.bottleneck_row`) beside the engine's bottleneck metrics: the
#: sojourn statistics flattened, the link rate and the run-level counters.
DERIVED_BOTTLENECK_METRICS = (
    "rate_mbps", "jain_index", "packets_sent", "packets_delivered", "packets_dropped", "packets_in_flight",
    "packets_data", "packets_acks", "events", "sojourn_count", "sojourn_mean_ms", "sojourn_p50_ms",
    "sojourn_p90_ms", "sojourn_p99_ms", "sojourn_p999_ms", "sojourn_max_ms",
)  # fmt: skip
#: Identity columns that are numeric but not metrics.
_KEYS = {"id", "group", "flow", "trial", "seed", "point", "wall_s"}


def known_metrics() -> set[str]:
    """What ``[study] metrics`` may name: the engine's per-flow and bottleneck summary
    metrics (schema ``metrics``) and the derived bottleneck columns; ``qdisc_*`` extras too."""
    return (
        set(schema.metric_names("flow_summary"))
        | set(schema.metric_names("bottleneck_summary"))
        | set(DERIVED_BOTTLENECK_METRICS)
    )


def check_metrics(metrics: Any) -> None:
    """``[study] metrics``: a list of known metric names (``qdisc_*`` extras are accepted)."""
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ScenarioError(f"study.metrics: {metrics!r} is not a list of metric names; expected e.g. ['goodput_mbps']")
    known = known_metrics()
    for metric in metrics:
        if metric not in known and not metric.startswith("qdisc_"):
            raise ScenarioError(
                f"study.metrics: {metric!r} is not a metric; known: {', '.join(sorted(known))}, qdisc_*"
            )


def _numeric_metrics(frame: pd.DataFrame, wanted: Sequence[str] | None) -> list[str]:
    names = []
    for name in frame.columns:
        if name in _KEYS or not pd.api.types.is_numeric_dtype(frame[name]) or pd.api.types.is_bool_dtype(frame[name]):
            continue
        if wanted is None or name in wanted:
            names.append(name)
    return names


def _stats(values: np.ndarray, t975: dict[int, float]) -> dict[str, float]:
    values = values[~np.isnan(values)]
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    std = float(values.std(ddof=1)) if n > 1 else math.nan
    if n > 1 and n not in t975:
        t975[n] = t_quantile(0.975, n - 1)
    half = t975[n] * std / math.sqrt(n) if n > 1 else math.nan
    return {"n": n, "mean": mean, "std": std, "ci95_low": mean - half, "ci95_high": mean + half, "ci95_half": half}


def _long(frame: pd.DataFrame, keys: list[str], metrics: list[str], scope: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if frame.empty:
        return rows
    # Student's t quantile by sample size (a SciPy call costs more than the rest of a row),
    # and each group's metrics as one float block: the values, and so the statistics, are
    # those of one column at a time (each column's non-NaN values are copied out before
    # they are summed).
    t975: dict[int, float] = {}
    for group_key, group in frame.groupby(keys, sort=True, dropna=False):
        ident = dict(zip(keys, group_key if isinstance(group_key, tuple) else (group_key,), strict=True))
        block = group[metrics].to_numpy(dtype=np.float64, na_value=np.nan) if metrics else None
        for j, metric in enumerate(metrics):
            rows.append({**ident, "scope": scope, "metric": metric, **_stats(block[:, j], t975)})
    return rows


def summarise(
    flows: pd.DataFrame,
    bottleneck: pd.DataFrame,
    factor_columns: Sequence[str],
    metrics: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The long per-point summary table (see the module docstring) from the catalog's
    ``flows`` and ``bottleneck`` tables (one row per run and flow / per run)."""
    point_keys = ["point", *factor_columns]
    rows = _long(flows, [*point_keys, "id", "label", "cc"], _numeric_metrics(flows, metrics), "flow")
    for row in rows:
        row["flow"] = row.pop("id")
    rows += _long(bottleneck, point_keys, _numeric_metrics(bottleneck, metrics), "bottleneck")
    columns = [*point_keys, "scope", "flow", "label", "cc", "metric", "n", "mean", "std", "ci95_low", "ci95_high"]
    columns.append("ci95_half")
    frame = pd.DataFrame(rows, columns=columns)
    frame["flow"] = frame["flow"].astype("Int64")
    return frame
