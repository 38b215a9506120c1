"""Analysis layer: derived metrics, published PAM 2025 results, comparison and figures.

All functions take pandas DataFrames (a run's ``flows``/series tables, or the study
catalog's tables stacked over runs) and return new objects. See docs/analysis.md.

* :mod:`.metrics` — shares and harm labels, ratios, Jain's index, utilisation, mark/drop
  probabilities, queue delay, Student-t confidence intervals, per-point aggregation;
* :mod:`.published` — the PAM 2025 Prague-vs-CUBIC tables and :func:`compare`;
* :mod:`.figures` — heatmap table, bars, CCDF, time series, and :func:`save`
  (imported lazily: matplotlib is loaded only when figures are used);
* :mod:`.runplots` — a run directory's flent-style figures and its ``run.html`` (``l4slab plot``);
* :mod:`.html` — self-contained HTML reports and the escaping of user text (Markdown, HTML, matplotlib);
* :mod:`.verdict` — the "Adopt L4S here?" verdict of PAM-shaped studies.
"""

from __future__ import annotations

from .metrics import (
    HARMED_FACTOR,
    HARMFUL_FACTOR,
    PAM_CAPACITY_MBPS,
    TESTBED_L4S_CCS,
    MeanCI,
    add_harm,
    add_probabilities,
    aggregate,
    ccdf,
    ccdf_from_histogram,
    fair_share,
    flow_class,
    group_harm,
    group_ratio,
    harm_label,
    harm_labels,
    jain_by_run,
    jain_index,
    l4s_congestion_controls,
    mean_ci,
    pam_cells,
    probability,
    rate_ratio,
    sojourn_stats,
    srtt_queue_delay,
    t_quantile,
    throughput_share,
    utilisation,
    window_ratio,
)
from .published import BUFFERS_BDP, CLASSICS, QUEUE_ORDER, Comparison, compare, load_published, published_cell

__all__ = [
    "HARMED_FACTOR", "HARMFUL_FACTOR", "PAM_CAPACITY_MBPS", "TESTBED_L4S_CCS", "MeanCI", "add_harm",
    "add_probabilities", "aggregate", "ccdf", "ccdf_from_histogram", "fair_share", "flow_class", "group_harm",
    "group_ratio", "harm_label", "harm_labels", "jain_by_run", "jain_index", "l4s_congestion_controls", "mean_ci",
    "pam_cells", "probability", "rate_ratio", "sojourn_stats", "srtt_queue_delay", "t_quantile", "throughput_share",
    "utilisation", "window_ratio",
    "BUFFERS_BDP", "CLASSICS", "QUEUE_ORDER", "Comparison", "compare", "load_published", "published_cell",
]  # fmt: skip


def __getattr__(name: str):
    if name in ("figures", "runplots", "html", "verdict"):  # lazy: matplotlib only when figures are used
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
