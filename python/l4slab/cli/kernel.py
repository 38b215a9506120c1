"""``l4slab kernel build [--update] [--jobs N] [--cc-source FILE ...]``, ``l4slab kernel status`` and
``l4slab kernel compare DIR``: the kernel backend's guest and the engine-against-kernel table
(docs/kernel.md).

``build`` builds the User-Mode Linux kernel and its initramfs from Debian's source and the
project's files, or finds them in the cache (no network then); it prints progress on
stderr and, when done, the kernel release and where it is. ``--cc-source`` builds a user's
own congestion control (``tcp_NAME.c``) in beside the project's. ``status`` says what is
cached, without building or touching the network. ``compare`` joins a study directory (the
engine) and ``DIR/kernel`` (the same study with ``--backend kernel``) point by point
(:mod:`l4slab.kernel.differential`). Failures are one line, exit 1 (2 for bad input)."""

from __future__ import annotations

import argparse
import json

from .common import EXIT_ENGINE, EXIT_OK, error


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "kernel",
        help="build or inspect the kernel backend's guest (real Linux in User-Mode Linux)",
        description=(
            "The kernel backend's guest: a User-Mode Linux kernel built from Debian's linux-source-7.* with the "
            "project's patches and congestion controls (TCP Prague), and its initramfs. Cached by the hash of its inputs."
        ),
    )
    sub = cmd.add_subparsers(dest="kernel_command", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build the guest, or find it in the cache", description="Build the guest, or find it in the cache.")
    b.add_argument("--update", action="store_true", help="ask Debian for the newest linux-source-7.* even when a build is cached")
    b.add_argument("--jobs", type=int, metavar="N", help="parallel compile jobs (default: the number of CPUs)")
    b.add_argument(
        "--cc-source", action="append", default=[], metavar="FILE",
        help="a congestion control of your own (tcp_NAME.c) to build in; repeatable",
    )  # fmt: skip
    b.add_argument("--json", action="store_true", help="print the build's kernel.json")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    s = sub.add_parser("status", help="what is cached (no build, no network)", description="What is cached.")
    s.add_argument("--json", action="store_true", help="print the cached build's kernel.json")
    c = sub.add_parser(
        "compare",
        help="the engine against the kernel: a study run on both backends, per point and metric",
        description=(
            "Compare a study directory (the engine's runs) with DIR/kernel (the same study with --backend kernel): "
            "per point and metric the engine's mean beside the kernel's mean and trial spread, with a verdict."
        ),
    )
    c.add_argument("dir", metavar="DIR", help="the engine's study directory (the kernel's is DIR/kernel)")
    c.add_argument("--kernel-dir", metavar="KDIR", help="the kernel backend's study directory (default DIR/kernel)")
    c.add_argument("--markdown", metavar="FILE", help="write the fidelity table as Markdown")
    c.add_argument("--csv", metavar="FILE", help="write every compared row as CSV")


def command(args: argparse.Namespace) -> int:
    from ..errors import ScenarioError
    from ..kernel import build as kb

    if args.kernel_command == "compare":
        from ..kernel import differential

        frame = differential.compare(args.dir, args.kernel_dir)
        text = differential.table_markdown(frame)
        if args.markdown:
            from ..io import write_text

            write_text(args.markdown, text)
        if args.csv:
            from ..io import write_text

            write_text(args.csv, frame.to_csv(index=False))
        print(text, end="")
        return EXIT_OK
    if args.kernel_command == "status":
        kernel = kb.find_cached()
        if kernel is None:
            error(f"no guest kernel for the project's current files in {kb.cache_root()} (run `l4slab kernel build`)")
            return EXIT_ENGINE
        _print(kernel, args.json)
        return EXIT_OK
    if args.jobs is not None and not 1 <= args.jobs <= 64:
        raise ScenarioError(f"--jobs: {args.jobs} is not within 1-64")
    kernel = kb.ensure_kernel(progress=not args.quiet, update=args.update, jobs=args.jobs, extra_modules=args.cc_source)
    _print(kernel, args.json)
    return EXIT_OK


def _print(kernel, as_json: bool) -> None:
    if as_json:
        print(json.dumps(kernel.meta, indent=2))
        return
    meta = kernel.meta
    ccs = sorted({name for names in (meta.get("congestion_controls") or {}).values() for name in names})
    print(f"kernel {kernel.release} ({meta.get('source_package')} {meta.get('source_version')}, Debian {meta.get('debian_suite')})")
    print(f"  linux      {kernel.linux}")
    print(f"  initramfs  {kernel.initramfs}")
    print(f"  project congestion controls: {', '.join(ccs) or '-'} (and mainline's reno, cubic, dctcp, bbr)")
    print(f"  built in {meta.get('build_wall_s')} s; iproute2 {meta.get('packages', {}).get('iproute2')}")
