"""One run of a study as a run: its verified run file read into the parts a run directory
holds, so that ``l4slab plot`` and ``l4slab export`` take any run of a study.

A study keeps one Parquet file per run (:mod:`.store`), not a run directory: the flows,
bottleneck and classes rows and both series, with the run's identity. The run's resolved
engine config is the plan's (``plan.json``, the point's ``config``), and ``summary`` is
rebuilt from the stored rows: the flows' entries as the run's ``summary.json`` has them, the
bottleneck's rate, qdisc and per-queue sojourn, the bin width (the series' step) and the
duration (the series' end). Fields a run directory's summary has beyond those are absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError

__all__ = ["resolve", "load"]


def resolve(path: str | os.PathLike[str]) -> Path | None:
    """``STUDY_DIR/runs/<id>.parquet`` or ``STUDY_DIR/runs/<unique id prefix>`` → the run
    file; None for any other path (a run directory); one line when a prefix is not unique."""
    path = Path(path)
    if path.parent.name != "runs":
        return None
    if path.suffix == ".parquet":
        return path
    if path.exists() or not path.parent.is_dir():
        return None
    matches = sorted(path.parent.glob(f"{path.name}*.parquet"))
    if len(matches) == 1:
        return matches[0]
    raise ScenarioError(
        f"RUN: {path.name!r} names {len(matches)} runs of {path.parent.parent}; expected a unique run id prefix"
    )


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The run file at ``path`` (see :func:`resolve`), verified: ``study_dir``, ``run_id``,
    ``name`` (``<study> p<point> t<trial>``), ``meta``, ``summary``, ``config``, ``flows``,
    ``classes``, ``bottleneck_row``, ``flow_series``, ``bottleneck_series``."""
    from . import store

    path = Path(path)
    study_dir = path.parent.parent
    try:
        meta, table = store.verify_run_file(path)
    except FileNotFoundError:
        raise ScenarioError(f"RUN: {path} does not exist") from None
    except (OSError, store.CorruptRunFile) as err:
        raise ScenarioError(f"RUN: {' '.join(str(err).split())}") from None
    flows = store.split_table(table, "flows")
    classes = store.split_table(table, "classes")
    bottleneck = store.split_table(table, "bottleneck")
    series = store.split_table(table, "bottleneck_series")
    flow_series = store.split_table(table, "flow_series")
    plan = store.load_plan(study_dir) or {}
    point = int(meta.get("point", -1))
    planned = plan["points"][point] if 0 <= point < len(plan.get("points") or []) else {}
    if planned and store.identity_mismatch(meta) is None:
        from .spec import config_digest

        if config_digest({**planned.get("config", {}), "seed": meta.get("seed")}) != meta.get("config_sha256"):
            planned = {}  # the plan's point is another configuration: a run of an earlier plan
    times = np.sort(series["time_s"].unique()) if "time_s" in series else np.array([])
    bin_s = float(np.median(np.diff(times))) if times.size > 1 else 0.1
    paths = {f.get("column"): str(f.get("path")) for f in plan.get("factors") or [] if isinstance(f, dict)}
    factors = " · ".join(f"{paths.get(k, k).split('.')[-1]}={v}" for k, v in (meta.get("factors") or {}).items())
    study = str(plan.get("study") or meta.get("study") or study_dir.name)
    row = bottleneck.iloc[0].to_dict() if len(bottleneck) else {}
    warmup_s = 0.0
    scenario = planned.get("scenario") or {}
    if isinstance(scenario.get("warmup"), str):
        from ..units import UnitError, time_ns

        try:
            warmup_s = time_ns(scenario["warmup"]) / 1e9
        except UnitError:
            pass
    summary = {
        "scenario": f"{study} point {point}" + (f" ({factors})" if factors else ""),
        "seed": meta.get("seed"),
        "bin_s": bin_s,
        "duration_s": float(times[-1] + bin_s) if times.size else 0.0,
        "warmup_s": warmup_s,
        "flows": flows.to_dict("records"),
        "bottleneck": {
            "rate_mbps": row.get("rate_mbps"),
            "qdisc_config": row.get("qdisc_config", ""),
            "sojourn_by_class": [
                {"class": str(c["class"]),
                 "sojourn_ms": {k[:-3] if k.endswith("_ms") else k: v for k, v in c.items() if k != "class"}}
                for c in classes.to_dict("records")
            ],  # fmt: skip
        },
    }
    return {
        "study_dir": study_dir,
        "run_id": str(meta.get("id", path.stem)),
        "name": f"{study} p{point} t{meta.get('trial', '?')}",
        "meta": meta,
        "summary": summary,
        "config": planned.get("config") or {},
        "flows": flows,
        "classes": classes,
        "bottleneck_row": row,
        "flow_series": flow_series,
        "bottleneck_series": series,
    }
