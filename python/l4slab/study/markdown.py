"""Markdown pieces shared by study reports: tables and "mean ± half-width" cells."""

from __future__ import annotations

import pandas as pd

__all__ = ["markdown_table", "mean_ci"]


def mean_ci(mean: float, half: float, digits: int = 1) -> str:
    """``"12.3 ± 0.4"``; ``"–"`` for a missing mean, the bare mean without a half-width."""
    if pd.isna(mean):
        return "–"
    if pd.isna(half):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``frame`` (missing values as empty cells)."""
    cols = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v) for v in row.tolist()) + " |")
    return "\n".join(lines)
