"""What every ``l4slab`` command shares: exit statuses, the one-line error, number and table printing."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_ENGINE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def error(message: str) -> None:
    """Print ``l4slab: error: MESSAGE`` as one line on stderr."""
    print(f"l4slab: error: {' '.join(str(message).split())}", file=sys.stderr)


def check_out_dir(out: str | os.PathLike[str], flag: str = "--out") -> None:
    """Refuse, before anything runs, an output directory that cannot be one: an existing
    file, a path under a file, or a place whose nearest existing parent is not writable.
    Raises :class:`~l4slab.errors.ScenarioError` (exit 2) naming ``flag``."""
    from ..errors import ScenarioError

    if str(out).strip() == "":
        raise ScenarioError(f"{flag}: an empty path is not a directory; expected e.g. {flag} results/x")
    if "\0" in str(out):
        raise ScenarioError(f"{flag}: the path holds a NUL character")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ScenarioError(f"{flag}: {out} is an existing file, not a directory")
    parent = path.absolute()
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ScenarioError(f"{flag}: {out} cannot be created: {parent} is a file, not a directory")
    where = "" if parent == path.absolute() else f" ({parent} does not allow writing)"
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ScenarioError(f"{flag}: {out} is not writable{where}")
    try:  # root passes os.access everywhere; /proc, read-only mounts refuse a real file
        import tempfile

        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as err:
        raise ScenarioError(f"{flag}: {out} is not writable{where}: {err.strerror or err}") from None


def stdout_console(width: int):
    """A rich ``Console`` on stdout, ``width`` columns when piped. A closed stdout raises
    :class:`BrokenPipeError`, which :func:`l4slab.cli.main` ends quietly with status 0
    (rich's own handling exits 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(32, "stdout closed")

    return _Console(width=None if sys.stdout.isatty() else width)


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
    from rich.table import Table

    table = Table(show_edge=False)
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*(fmt(v, 4) if isinstance(v, float) else str(v) for v in row))
    stdout_console(200).print(table)


def add_set_argument(cmd, example: str = "--set bottleneck.rate=50Mbit --set duration=10s") -> None:
    """``--set KEY=VALUE`` (repeatable), the scenario override every scenario command takes."""
    cmd.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a field, e.g. {example} (repeatable)",
    )


def add_scenario_command(commands, name: str, help: str, description: str):
    """A subcommand that runs one scenario: its parser with the SCENARIO argument."""
    cmd = commands.add_parser(name, help=help, description=description)
    cmd.add_argument("scenario", metavar="SCENARIO", help="scenario TOML file")
    return cmd


def load_command_scenario(args):
    """The scenario a scenario command names: checks ``--out`` first (when the command has
    one), then loads SCENARIO with its ``--set`` overrides and ``--seed``."""
    from ..scenario import load_scenario, parse_override

    if getattr(args, "out", None) is not None:
        check_out_dir(args.out)
    overrides = dict(parse_override(item) for item in args.overrides)
    if getattr(args, "seed", None) is not None:
        overrides["seed"] = args.seed
    return load_scenario(Path(args.scenario), overrides=overrides)
