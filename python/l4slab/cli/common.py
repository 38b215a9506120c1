"""What every ``l4slab`` command shares: exit statuses, the one-line error, number and table printing."""

from __future__ import annotations

import sys
from typing import Any

EXIT_OK = 0
EXIT_ENGINE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def error(message: str) -> None:
    """Print ``l4slab: error: MESSAGE`` as one line on stderr."""
    print(f"l4slab: error: {' '.join(str(message).split())}", file=sys.stderr)


def fmt(value: Any, digits: int = 1) -> str:
    """A table cell: ``–`` for a missing value, floats with ``digits`` decimals."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_frame(frame, *, csv: bool) -> None:
    """A DataFrame on stdout: CSV, or a table as wide as the terminal (200 columns when piped)."""
    if csv:
        sys.stdout.write(frame.to_csv(index=False))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_edge=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*(fmt(v, 4) if isinstance(v, float) else str(v) for v in row))
    Console(width=None if sys.stdout.isatty() else 200).print(table)
