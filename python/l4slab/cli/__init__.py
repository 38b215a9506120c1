"""The ``l4slab`` command: one module per command, dispatched from here.

    l4slab run SCENARIO [--out DIR] [--seed N] [--set KEY=VALUE ...]
    l4slab bench [--json] [--scenario FILE] [--repeat N] [--duration TIME] [--qdisc all|KIND,...]
    l4slab demo --out DIR [--duration 20s] [--jobs N]
    l4slab study run FILE [--out DIR] [--executor local|dask-local|dask://HOST:PORT] [--jobs N] [--emit-jobs FILE]
    l4slab study report DIR | list | status DIR | run-one DIR RUN_ID
    l4slab query DIR "SQL" [--csv]
    l4slab export (--flent | --iperf3-json) RUN_DIR [--output PATH]
    l4slab fidelity [--cases NAME,NAME] [--quick] [--out DIR] [--set KEY=VALUE ...]
    l4slab plot RUN_DIR [--out DIR] [--format png,svg]
    l4slab emulate SCENARIO [--out DIR] [--seed N] [--set KEY=VALUE ...]
    l4slab compare SCENARIO [--trials N] [--json FILE] [--csv FILE] [--out DIR]
    l4slab cleanup [--prefix P]
    l4slab kernel build [--update] [--jobs N] [--cc-source FILE ...] | status

Each command module (:mod:`.run`, :mod:`.bench`, :mod:`.demo`, :mod:`.study`,
:mod:`.query`, :mod:`.plot`) has ``add_parser(commands)`` and ``command(args) -> exit status``.
User mistakes (an invalid scenario, a missing file) print one line
``l4slab: error: ...`` on stderr and exit with status 2; engine failures exit 1.
No traceback is ever printed for either. An output directory (``--out``) is checked
before anything runs; a closed stdout (``| head``) ends a command quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from ..errors import EngineError, EngineUnavailableError, ScenarioError
from ..version import PACKAGE_VERSION
from . import bench, cleanup, compare, demo, emulate, export, fidelity, kernel, plot, query, run, study
from .common import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, error

__all__ = ["main"]

COMMANDS = {
    "run": run,
    "bench": bench,
    "demo": demo,
    "study": study,
    "query": query,
    "export": export,
    "fidelity": fidelity,
    "plot": plot,
    "emulate": emulate,
    "cleanup": cleanup,
    "compare": compare,
    "kernel": kernel,
}


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (``l4slab: error: ...``, exit 2), like every other mistake."""

    def error(self, message: str):  # type: ignore[override]
        error(f"{message} (see {self.prog} --help)")
        raise SystemExit(EXIT_USAGE)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="l4slab",
        description="Packet-level L4S network simulator: TOML scenarios in, summary.json and Parquet out.",
    )
    parser.add_argument("--version", action="version", version=f"l4slab {PACKAGE_VERSION}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(commands)
    return parser


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``l4slab`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        status = COMMANDS[args.command].command(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # stdout closed by the reader (`l4slab run X --out D | head -1`): results are
        # already written; stop quietly, and keep the interpreter's final flush quiet too.
        _silence_stdout()
        return EXIT_OK
    except ScenarioError as err:
        error(str(err))
        return EXIT_USAGE
    except (EngineError, EngineUnavailableError) as err:
        error(str(err))
        return EXIT_ENGINE
    except OSError as err:
        # e.g. an output directory that cannot be created or written.
        target = f"{err.filename}: " if getattr(err, "filename", None) else ""
        error(f"{target}{err.strerror or err}")
        return EXIT_ENGINE
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED
    except MemoryError:
        error("out of memory")
        return EXIT_ENGINE
    except Exception as err:  # noqa: BLE001 - the last net: one line, never a traceback
        where = ""
        if err.__traceback__ is not None:
            import traceback

            last = traceback.extract_tb(err.__traceback__)[-1]
            where = f" at {os.path.basename(last.filename)}:{last.lineno}"
        text = " ".join(str(err).split())
        error(f"internal error: {type(err).__name__}: {text[:200]}{where} (please report this)")
        return EXIT_ENGINE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
