"""``l4slab query DIR "SQL" [--csv] [--allow-files]``: SQL over a study's DuckDB catalog, read-only
unless ``--allow-files`` (:func:`l4slab.study.catalog.query`)."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, print_frame


def add_parser(commands) -> None:
    query_cmd = commands.add_parser(
        "query",
        help="SQL over a study's DuckDB catalog",
        description="Run SQL over DIR/catalog.duckdb: tables runs, flows, bottleneck, classes, summaries; "
        "views flow_series, bottleneck_series.",
    )
    query_cmd.add_argument("dir", metavar="DIR", help="study directory")
    query_cmd.add_argument("sql", metavar="SQL", help="e.g. \"SELECT * FROM summaries WHERE metric = 'goodput_mbps'\"")
    query_cmd.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    query_cmd.add_argument(
        "--allow-files",
        action="store_true",
        help="run any SQL with DuckDB's file access (read_csv of other files, COPY ... TO, ATTACH); by default "
        "the SQL reads the study only: SELECT and EXPLAIN over its catalog and run files",
    )


def command(args: argparse.Namespace) -> int:
    from .. import study

    print_frame(study.query(args.dir, args.sql, allow_files=args.allow_files), csv=args.csv)
    return EXIT_OK
