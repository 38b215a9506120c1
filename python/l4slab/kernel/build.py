"""``l4slab kernel build``: the kernel backend's guest, built from the project's own files.

What is built (docs/kernel.md):

1. **Source**: Debian's newest ``linux-source-7.*`` of the unstable suite (``sid``), fetched
   with ``apt-get download`` through a *private* apt state under the cache (its own
   ``sources.list``, lists and archive cache; the system's apt sources are never read for
   packages nor changed), from the Debian mirror the machine's own apt uses.
2. **Patches** (``linux/patches/*.patch``, applied in name order with ``patch -p1``) and the
   project's congestion controls (``linux/net/*.c``, copied into ``net/ipv4/`` and built in).
3. **Configuration**: ``arch/um``'s ``x86_64_defconfig`` with ``linux/l4slab.config`` merged
   over it (``scripts/kconfig/merge_config.sh``); every ``=y`` of the fragment is checked
   after ``olddefconfig``.
4. **Kernel**: ``make ARCH=um linux`` (everything built in; the guest loads no module).
5. **User space** (the initramfs, ``initramfs.cpio``): the guest's ``/init``
   (``guest/init``), busybox (static), dash, iperf3 and tcpdump with the libraries they
   link, ethtool, Debian sid's ``iproute2`` (the first ``tc`` that knows ``dualpi2``) run through
   sid's C library loader, ``l4slab-probe`` (``guest/probe.c``, compiled statically
   against the kernel's own UAPI headers) and ``l4slab-flow`` (``guest/flow.c``, the
   testbed's bulk TCP sender and receiver, static), which share their argument checks
   (``guest/args.h``).

The result is cached under ``$L4SLAB_KERNEL_CACHE`` (default ``~/.cache/l4slab/kernel``) in a
folder named by the SHA-256 of every input (the source package and version, the config
fragment, the patches, the project's modules, the guest's files and this recipe's
version); ``kernel.json`` is written last and records the exact kernel release and the
versions of everything in it. A later call with unchanged project files is a cache hit
without touching the network; ``--update`` asks Debian again for the newest source.

Every failure is one line naming what failed and why (:class:`KernelBuildError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import EngineError
from ..io import write_json
from . import cpio, sources

__all__ = [
    "Kernel",
    "KernelBuildError",
    "cache_root",
    "ensure_kernel",
    "find_cached",
    "project_inputs",
    "FILES",
]

#: The kernel backend's own files (config fragment, patches, modules, guest programs).
FILES = Path(__file__).resolve().parent
#: Bumped when the guest's assembly below changes in a way the input files do not show
#: (a new entry; the kernel tree is kept).
RECIPE_VERSION = 3
#: What the kernel records of its build, fixed: the build's time, user and host are part of
#: ``uname -v`` and the banner, and the kernel mixes its ``utsname`` into its random pool
#: (``random.c:random_init_early``), so a guest's randomness would differ per build. Fixed,
#: a build of the same inputs by the same compiler is the same binary, and a seeded run on
#: it the same run (``guest.py``).
KBUILD_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2026",
    "KBUILD_BUILD_USER": "l4slab",
    "KBUILD_BUILD_HOST": "l4slab",
    "KBUILD_BUILD_VERSION": "1",
}
#: Bumped when the kernel tree's recipe (unpack, patch, configure) changes: a full rebuild.
TREE_RECIPE_VERSION = 1
#: Debian source package name pattern and suite.
SOURCE_PATTERN = re.compile(r"^linux-source-7\.\d+$")
SUITE = "sid"
#: sid packages whose files go into the guest besides the kernel source.
GUEST_DEBS = ("iproute2", "libc6")
#: Host programs the build runs, with the Debian package that brings each.
HOST_TOOLS = {
    "gcc": "gcc",
    "make": "make",
    "flex": "flex",
    "bison": "bison",
    "bc": "bc",
    "perl": "perl",
    "patch": "patch",
    "apt-get": "apt",
    "dpkg-deb": "dpkg",
    "xz": "xz-utils",
    "busybox": "busybox-static",
    "dash": "dash",
    "iperf3": "iperf3",
    "tcpdump": "tcpdump",
    "ethtool": "ethtool",
    "ldd": "libc-bin",
}
HOST_HEADERS = {"/usr/include/gelf.h": "libelf-dev"}
#: Objects a full build compiles (measured on linux-source-7.2 with l4slab.config); the
#: progress line's denominator, so it is approximate for another source version.
EXPECTED_OBJECTS = 980


class KernelBuildError(EngineError):
    """The guest kernel or its user space could not be built (one line)."""


@dataclass(frozen=True)
class Kernel:
    """A built guest: the UML binary, its initramfs and what went into them."""

    directory: Path
    linux: Path
    initramfs: Path
    #: ``uname -r`` of the guest kernel.
    release: str
    meta: dict[str, Any] = field(default_factory=dict)


def cache_root() -> Path:
    """Where built guests are kept: ``$L4SLAB_KERNEL_CACHE`` or ``~/.cache/l4slab/kernel``."""
    env = os.environ.get("L4SLAB_KERNEL_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "l4slab", "kernel").resolve()


def _input_files() -> list[Path]:
    wanted: list[Path] = [
        FILES / "linux" / "l4slab.config",
        FILES / "guest" / "init",
        FILES / "guest" / "args.h",
        FILES / "guest" / "probe.c",
        FILES / "guest" / "flow.c",
    ]
    wanted += sorted((FILES / "linux" / "patches").glob("*.patch"))
    wanted += sorted((FILES / "linux" / "net").glob("*.c"))
    return wanted


def project_inputs() -> tuple[dict[str, str], str]:
    """The project's inputs to the guest ({relative path: sha256}) and their digest."""
    files: dict[str, str] = {}
    for path in _input_files():
        if not path.exists():
            raise KernelBuildError(f"kernel build: the project file {path.relative_to(FILES)} is missing")
        files[str(path.relative_to(FILES))] = hashlib.sha256(path.read_bytes()).hexdigest()
    h = hashlib.sha256(f"recipe={RECIPE_VERSION}\n".encode())
    for name, digest in sorted(files.items()):
        h.update(f"{name}={digest}\n".encode())
    return files, h.hexdigest()


def _entry_key(
    project_digest: str, source_version: str, user: list[tuple[Path, str]] = (), patches: list[tuple[Path, str]] = ()
) -> str:
    text = f"{project_digest}\nsource={source_version}\n" + "".join(f"user={p.name}:{h}\n" for p, h in user)
    text += "".join(f"patch={p.name}:{h}\n" for p, h in patches)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _user_key(meta: dict[str, Any], key: str) -> list[tuple[str, str]]:
    """A cached build's user files as (file name, sha256), in build order: the same
    content under another path is the same kernel."""
    return [(Path(path).name, digest) for path, digest in (meta.get(key) or {}).items()]


def _load(entry: Path) -> Kernel | None:
    meta_path = entry / "kernel.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    linux, initramfs = entry / "linux", entry / "initramfs.cpio"
    if not (linux.is_file() and initramfs.is_file() and os.access(linux, os.X_OK)):
        return None
    return Kernel(directory=entry, linux=linux, initramfs=initramfs, release=str(meta.get("release", "")), meta=meta)


def find_cached(
    root: Path | None = None, extra_modules: Iterable[Path] = (), patches: Iterable[Path] = ()
) -> Kernel | None:
    """The newest complete cached guest built from the project's current files (and the
    user's ``extra_modules`` and ``patches``, by content), or None. Needs no network: the
    digests select the entries, any source version."""
    root = cache_root() if root is None else root
    try:
        _, digest = project_inputs()
        user = [(p.name, h) for p, h in _user_modules([Path(m).resolve() for m in extra_modules])]
        user_patches = [(p.name, h) for p, h in _user_patches([Path(m).resolve() for m in patches])]
    except KernelBuildError:
        return None
    found: list[tuple[float, Kernel]] = []
    if not root.is_dir():
        return None
    for entry in root.iterdir():
        if not entry.is_dir() or entry.name.startswith("."):
            continue
        kernel = _load(entry)
        if (
            kernel is not None
            and kernel.meta.get("project_digest") == digest
            and _user_key(kernel.meta, "user_modules") == user
            and _user_key(kernel.meta, "user_patches") == user_patches
        ):
            found.append((float(kernel.meta.get("built_at", 0)), kernel))
    return max(found, key=lambda item: item[0])[1] if found else None


# --- progress -----------------------------------------------------------------------------


class _Progress:
    def __init__(self, enabled: bool, stream=None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.step = 0

    def say(self, text: str) -> None:
        if self.enabled:
            print(f"l4slab kernel [{time.monotonic() - self.t0:6.0f} s] {text}", file=self.stream, flush=True)


# --- host commands ------------------------------------------------------------------------


def _run(cmd: list[str], what: str, *, cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> str:
    try:
        done = subprocess.run(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except FileNotFoundError:
        raise KernelBuildError(f"kernel build: {what}: {cmd[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise KernelBuildError(f"kernel build: {what}: no answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        raise KernelBuildError(f"kernel build: {what}: {_last_error(done.stderr or done.stdout)}")
    return done.stdout


def _last_error(text: str) -> str:
    """The line that says why: a compiler's or tool's own message before make's "Error N"."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    own = [line for line in lines if not re.match(r"^make(\[\d+\])?: \*\*\*", line)]
    errors = [line for line in own if re.search(r"(error|E:|fatal|failed|FAILED|not found|No such file)", line)]
    pick = (errors or own or lines or ["(no output)"])[-1]
    return " ".join(pick.split())[:300]


def check_host() -> None:
    """Every host tool the build needs is there, or one line naming the missing packages."""
    missing = sorted({pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None})
    missing += sorted({pkg for path, pkg in HOST_HEADERS.items() if not Path(path).exists()})
    if missing:
        raise KernelBuildError(
            f"kernel build: missing host packages: {' '.join(missing)} (Debian: apt-get install {' '.join(missing)})"
        )
    out = subprocess.run(["busybox"], capture_output=True, text=True).stdout
    desc = subprocess.run(["file", "-b", shutil.which("busybox") or ""], capture_output=True, text=True).stdout \
        if shutil.which("file") else "statically linked"
    if "statically linked" not in desc or "BusyBox" not in out:
        raise KernelBuildError("kernel build: busybox is not the static build (Debian: apt-get install busybox-static)")


# --- Debian sid through a private apt state ------------------------------------------------


def debian_mirror() -> str:
    """The Debian mirror of the machine's own apt configuration (``$L4SLAB_DEBIAN_MIRROR`` wins)."""
    env = os.environ.get("L4SLAB_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    candidates = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        # deb822: "URIs: http://.../debian" with "Suites: bookworm ..." (not -security)
        for block in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", block, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", block, re.M)
            if uris and suites and "security" not in suites.group(1) and "security" not in uris.group(1):
                return uris.group(1).rstrip("/")
        for line in text.splitlines():
            m = re.match(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and "security" not in m.group(1) and "security" not in m.group(2):
                return m.group(1).rstrip("/")
    raise KernelBuildError(
        "kernel build: no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list "
        "(set L4SLAB_DEBIAN_MIRROR=http://.../debian)"
    )


class _Apt:
    """apt-get/apt-cache with a private state under ``root`` (Dir::Etc::sourcelist etc.)."""

    def __init__(self, root: Path, mirror: str) -> None:
        self.root = root
        self.mirror = mirror
        for sub in ("lists/partial", "cache/archives/partial"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "sources.list").write_text(f"deb [trusted=yes] {mirror} {SUITE} main\n")
        (root / "status").touch()
        self.options = [
            "-o", f"Dir::Etc::sourcelist={root / 'sources.list'}",
            "-o", "Dir::Etc::sourceparts=/nonexistent",
            "-o", f"Dir::State::lists={root / 'lists'}",
            "-o", f"Dir::State::status={root / 'status'}",
            "-o", f"Dir::Cache={root / 'cache'}",
            "-o", "APT::Sandbox::User=root",
            "-o", "Acquire::Retries=2",
        ]  # fmt: skip

    def update(self) -> None:
        _run(["apt-get", *self.options, "-qq", "update"], f"apt-get update of Debian {SUITE} from {self.mirror}", timeout=300)

    def newest_source(self) -> tuple[str, str]:
        names = _run(["apt-cache", *self.options, "search", "--names-only", r"^linux-source-7\.[0-9]+$"], "apt-cache search")
        candidates = [line.split(" - ")[0].strip() for line in names.splitlines()]
        candidates = [c for c in candidates if SOURCE_PATTERN.match(c)]
        if not candidates:
            raise KernelBuildError(f"kernel build: Debian {SUITE} at {self.mirror} offers no linux-source-7.* package")
        name = max(candidates, key=lambda c: int(c.rsplit(".", 1)[1]))
        return name, self.version(name)

    def version(self, package: str) -> str:
        out = _run(["apt-cache", *self.options, "policy", package], f"apt-cache policy {package}")
        m = re.search(r"Candidate:\s*(\S+)", out)
        if not m or m.group(1) == "(none)":
            raise KernelBuildError(f"kernel build: Debian {SUITE} has no candidate for {package}")
        return m.group(1)

    def download(self, package: str, version: str, into: Path) -> Path:
        into.mkdir(parents=True, exist_ok=True)
        found = _deb(into, package, version)
        if found is not None:
            return found
        _run(
            ["apt-get", *self.options, "-qq", "download", f"{package}={version}"],
            f"apt-get download {package}={version} (no longer in Debian {SUITE}? run `l4slab kernel build --update`)",
            cwd=into,
            timeout=900,
        )
        found = _deb(into, package, version)
        if found is None:
            raise KernelBuildError(f"kernel build: apt-get download {package}={version} wrote no .deb")
        return found


def _deb(directory: Path, package: str, version: str) -> Path | None:
    quoted = version.replace(":", "%3a")
    for path in directory.glob(f"{package}_*.deb"):
        if path.name.startswith(f"{package}_{quoted}_") or path.name.startswith(f"{package}_{version.split(':')[-1]}_"):
            return path
    return None


# --- the build ----------------------------------------------------------------------------


def ensure_kernel(
    progress: bool = True,
    *,
    update: bool = False,
    jobs: int | None = None,
    root: Path | None = None,
    extra_modules: Iterable[Path] = (),
    patches: Iterable[Path] = (),
) -> Kernel:
    """A built guest for the project's current files: the cached one, or a new build.

    ``update`` asks Debian for the newest source even when a cached build exists (a new
    source version is a new cache entry; the old one stays until removed).
    ``extra_modules``: a user's own congestion controls (``tcp_*.c``), built in beside the
    project's; ``patches``: a user's kernel patches (``patch -p1``), applied to the kernel
    tree for this build only. Either makes a separate cache entry, an incremental build of
    the same kernel tree (seconds) on the source version of the cached build."""
    root = cache_root() if root is None else root
    extra = [Path(m).resolve() for m in extra_modules]
    user_patches = [Path(m).resolve() for m in patches]
    if not update:
        cached = find_cached(root, extra, user_patches)
        if cached is not None:
            return cached
    return build(progress=progress, jobs=jobs, root=root, extra_modules=extra, patches=user_patches, update=update)


def _tree_key(source_version: str) -> str:
    """The kernel tree's inputs: the source, the config fragment, the patches, the recipe."""
    h = hashlib.sha256(f"recipe={TREE_RECIPE_VERSION}\nsource={source_version}\n".encode())
    # The fragment's settings, not its comments: a reworded comment is no new kernel.
    settings = [line.strip() for line in (FILES / "linux" / "l4slab.config").read_text().splitlines()]
    h.update("\n".join(line for line in settings if line and not line.startswith("#")).encode() + b"\0")
    for path in sorted((FILES / "linux" / "patches").glob("*.patch")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def build(
    progress: bool = True,
    *,
    jobs: int | None = None,
    root: Path | None = None,
    extra_modules: Iterable[Path] = (),
    patches: Iterable[Path] = (),
    update: bool = True,
) -> Kernel:
    """Build the guest (kernel and initramfs) into the cache and return it.

    The kernel tree (source, patches, configuration, objects) is kept per source version
    and configuration under ``trees/``: the project's modules and a user's are compiled
    into it incrementally (seconds), so only a new source, config or project patch costs a
    full build. A user's patches are applied to the tree for the build and reverted after
    it (:func:`_user_patches_applied`). A variant of a cached build (the user's files, no
    ``update``) takes that build's source and guest packages and its initramfs, without
    asking Debian."""
    root = cache_root() if root is None else root
    say = _Progress(progress).say
    extra = [Path(m).resolve() for m in extra_modules]
    files, digest = project_inputs()
    user = _user_modules(extra)
    user_patches = _user_patches([Path(m).resolve() for m in patches])
    check_host()
    root.mkdir(parents=True, exist_ok=True)
    base = None if update or not (user or user_patches) else find_cached(root)
    if base is not None:
        mirror = str(base.meta.get("debian_mirror", ""))
        source_pkg, source_version = str(base.meta["source_package"]), str(base.meta["source_version"])
        versions = {str(k): str(v) for k, v in (base.meta.get("packages") or {}).items()}
        say(f"a variant of {base.directory.name} ({source_pkg} {source_version}) with your files")
    else:
        mirror = debian_mirror()
        say(f"asking Debian {SUITE} ({mirror}) for the newest linux-source-7.* (private apt state in {root / 'apt'})")
        apt = _Apt(root / "apt", mirror)
        apt.update()
        source_pkg, source_version = apt.newest_source()
        versions = {source_pkg: source_version, **{p: apt.version(p) for p in GUEST_DEBS}}
    entry = root / _entry_key(digest, source_version, user, user_patches)
    cached = _load(entry)
    if cached is not None:
        say(f"cache hit: {entry}")
        return cached
    if base is not None and all(_deb(root / "debs", p, v) for p, v in versions.items()):
        debs = {p: _deb(root / "debs", p, v) for p, v in versions.items()}
    else:
        if base is not None:  # the cached build's packages are gone: ask Debian for them
            apt = _Apt(root / "apt", mirror or debian_mirror())
            apt.update()
        say(f"downloading {source_pkg} {source_version}, " + ", ".join(f"{p} {versions[p]}" for p in GUEST_DEBS))
        debs = {p: apt.download(p, v, root / "debs") for p, v in versions.items()}

    t0 = time.monotonic()
    tree = root / "trees" / _tree_key(source_version)
    tree.parent.mkdir(parents=True, exist_ok=True)
    with _locked(tree.with_suffix(".lock")):
        cached = _load(entry)  # built by another process while this one waited
        if cached is not None:
            say(f"cache hit: {entry}")
            return cached
        src, out = tree / "src", tree / "build"
        _revert_user_patches(tree, say)  # a build that died with them applied
        fresh = not (tree / "tree.json").exists()
        if fresh:
            shutil.rmtree(tree, ignore_errors=True)
            tree.mkdir()
            src = _unpack_source(debs[source_pkg], tree, say).rename(src)
            _apply_patches(src, say)
            _configure(src, out, say)
            write_json(tree / "tree.json", {"source_package": source_pkg, "source_version": source_version})
        modules = sorted((FILES / "linux" / "net").glob("*.c")) + [m for m, _ in user]
        _sync_modules(src, modules, say)
        release = _run(["make", "-s", "ARCH=um", f"O={out}", "kernelrelease"], "make kernelrelease", cwd=src).strip()
        with _user_patches_applied(tree, src, user_patches, say):
            _make_user_objects(src, out, [m for m, _ in user], user_patches, say)
            _make_kernel(src, out, jobs, say, full=fresh, user_files=_user_file_map(user, user_patches))
        # The UAPI headers the guest programs compile against: `make headers` (the sanitised
        # tree in $(O)/usr/include; headers_install would copy it on with rsync).
        hdr = tree / "hdr"
        if not (hdr / "usr" / "include" / "linux" / "tcp.h").exists():
            say("generating the kernel's UAPI headers for the guest programs")
            _run(["make", "-s", "ARCH=x86", f"O={hdr}", "headers"], "make headers", cwd=src)
        uapi_include = hdr / "usr" / "include"
        staging = root / f".staging-{entry.name}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            shutil.copy2(out / "linux", staging / "linux")
            subprocess.run(["strip", str(staging / "linux")], capture_output=True)
            if base is not None and (base.directory / "initramfs.cpio").is_file():
                # the guest's user space does not depend on the user's files: the cached build's
                shutil.copy2(base.directory / "initramfs.cpio", staging / "initramfs.cpio")
                guest_tools = dict(base.meta.get("guest_tools") or {})
            else:
                say("assembling the guest's user space (initramfs)")
                work = staging / "work"
                work.mkdir()
                guest_tools = _initramfs(staging / "initramfs.cpio", uapi_include, debs, work)
                shutil.rmtree(work)
            meta = {
                "release": release,
                "source_package": source_pkg,
                "source_version": source_version,
                "debian_suite": SUITE,
                "debian_mirror": mirror,
                "packages": versions,
                "guest_tools": guest_tools,
                "project_digest": digest,
                "project_files": files,
                "user_modules": {str(m): h for m, h in user},
                "user_patches": {str(m): h for m, h in user_patches},
                "congestion_controls": _cc_names(modules),
                "recipe_version": RECIPE_VERSION,
                "tree": str(tree),
                "built_at": time.time(),
                "build_wall_s": round(time.monotonic() - t0, 1),
                "host_gcc": _run(["gcc", "-dumpfullversion"], "gcc -dumpfullversion").strip(),
            }
            write_json(staging / "kernel.json", meta)
            shutil.rmtree(entry, ignore_errors=True)
            staging.rename(entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    say(f"built {release} in {meta['build_wall_s']:.0f} s: {entry}")
    kernel = _load(entry)
    assert kernel is not None
    return kernel


class _locked:
    """An exclusive ``flock`` on ``path`` (one build of a tree at a time, across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self):
        import fcntl

        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def _cc_names(modules: Iterable[Path]) -> dict[str, list[str]]:
    """{file name: the ``tcp_congestion_ops`` names it registers} (their ``.name = "..."``)."""
    return {m.name: sources.registered_names(m.read_text(errors="replace")) for m in modules}


def _user_modules(paths: list[Path]) -> list[tuple[Path, str]]:
    """A user's congestion-control sources, checked (:func:`l4slab.kernel.sources.read_cc_source`)."""
    out: list[tuple[Path, str]] = []
    owner: dict[str, str] = {}
    for path in paths:
        try:
            source = sources.read_cc_source(path)
        except sources.SourceError as err:
            raise KernelBuildError(f"kernel cc_sources: {err}") from None
        for name in source.names:
            if name in owner:
                raise KernelBuildError(
                    f"kernel cc_sources: {name!r} is registered by both {owner[name]} and {path.name}"
                )
            owner[name] = path.name
        if any(p.name == path.name for p, _ in out):
            raise KernelBuildError(f"kernel cc_sources: two files named {path.name}")
        out.append((source.path, source.sha256))
    return out


def _user_patches(paths: list[Path]) -> list[tuple[Path, str]]:
    """A user's kernel patches, checked (:func:`l4slab.kernel.sources.read_patch`)."""
    out: list[tuple[Path, str]] = []
    for path in paths:
        try:
            patch = sources.read_patch(path)
        except sources.SourceError as err:
            raise KernelBuildError(f"kernel patches: {err}") from None
        out.append((patch.path, patch.sha256))
    return out


def _user_file_map(user: list[tuple[Path, str]], patches: list[tuple[Path, str]]) -> dict[str, tuple[str, str]]:
    """{path in the tree: (the scenario field, what to call it)} for an error in a user's
    file: a module by its own path, a file a user's patch changes by the patch and the file."""
    names = {f"net/ipv4/{path.name}": ("kernel cc_sources", str(path)) for path, _ in user}
    for path, _ in patches:
        for rel in sources.read_patch(path).files:
            names.setdefault(rel, ("kernel patches", f"{path.name}: {rel}"))
    return names


#: The journal of a user's patches applied to a kernel tree: copies of them, in order. It
#: exists only while they are applied; a build that finds it reverts them first.
_APPLIED = "user-patches.applied"


class _user_patches_applied:
    """Apply a user's patches to the kernel tree for one build and revert them after it,
    whatever happens (the tree stays the project's for every other build). Each is tried
    with ``--dry-run`` first, so a patch that does not apply changes nothing; the journal
    (``tree/user-patches.applied/``) lets a later build revert what a killed one left."""

    def __init__(self, tree: Path, src: Path, patches: list[tuple[Path, str]], say) -> None:
        self.tree, self.src, self.patches, self.say = tree, src, patches, say

    def __enter__(self):
        if not self.patches:
            return self
        journal = self.tree / _APPLIED
        journal.mkdir()
        try:
            for index, (path, _) in enumerate(self.patches):
                data = path.read_bytes()
                check = _patch(self.src, data, "--dry-run")
                if check.returncode != 0:
                    raise KernelBuildError(
                        f"kernel patches: {path.name} does not apply to the kernel tree "
                        f"({self.tree.name}): {_last_error(check.stdout + check.stderr)}"
                    )
                (journal / f"{index:02d}-{path.name}").write_bytes(data)
                done = _patch(self.src, data)
                if done.returncode != 0:
                    raise KernelBuildError(f"kernel patches: {path.name}: {_last_error(done.stdout + done.stderr)}")
                self.say(f"applied your patch {path.name}")
        except BaseException:
            _revert_user_patches(self.tree, self.say)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.patches:
            _revert_user_patches(self.tree, self.say)


def _patch(src: Path, data: bytes, *extra: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["patch", "-p1", "--forward", "--batch", "--silent", *extra], cwd=src, input=data, capture_output=True
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    )


def _revert_user_patches(tree: Path, say) -> None:
    """Revert the user's patches the journal lists (newest first) and remove it. A patch
    that does not revert leaves the tree unknown: it is then marked for a full rebuild."""
    journal = tree / _APPLIED
    if not journal.is_dir():
        return
    for copy in sorted(journal.iterdir(), reverse=True):
        done = subprocess.run(
            ["patch", "-p1", "-R", "--batch", "--silent", "--remove-empty-files"],
            cwd=tree / "src",
            input=copy.read_bytes(),
            capture_output=True,
        )
        if done.returncode != 0:
            (tree / "tree.json").unlink(missing_ok=True)
            say(f"your patch {copy.name[3:]} did not revert; the kernel tree will be rebuilt")
            break
        copy.unlink()
    shutil.rmtree(journal, ignore_errors=True)


def _make_user_objects(src: Path, out: Path, user: list[Path], patches: list[tuple[Path, str]], say) -> None:
    """Compile a user's congestion controls alone first: a compile error is then one line
    naming the user's file and the compiler's message, within seconds."""
    for path in user:
        target = f"net/ipv4/{path.stem}.o"
        say(f"compiling your {path.name}")
        done = subprocess.run(
            ["nice", "-n", "5", "make", "ARCH=um", f"O={out}", target],
            cwd=src, env=dict(os.environ, **KBUILD_ENV), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        if done.returncode != 0:
            user_files = {f"net/ipv4/{path.name}": ("kernel cc_sources", str(path))}
            raise KernelBuildError(_compile_error(done.stdout + done.stderr, user_files))


_GCC_MESSAGE = re.compile(r"^(?P<file>[^\s:]+\.[ch]):(?P<pos>\d+(?::\d+)?): (?P<kind>(?:fatal )?error): (?P<msg>.*)$")


def _compile_error(text: str, user_files: dict[str, tuple[str, str]]) -> str:
    """One line for a failed compile of a user's file: ``kernel cc_sources: FILE:LINE:COL:
    error: MESSAGE`` with the user's own path (the tree's copy named as the user's)."""
    first_other = None
    for line in text.splitlines():
        m = _GCC_MESSAGE.match(line.strip())
        if not m:
            continue
        path = m.group("file")
        for rel, (what, shown) in user_files.items():
            if path == rel or path.endswith("/" + rel):
                return f"{what}: {shown}:{m.group('pos')}: {m.group('kind')}: {m.group('msg')}"[:400]
        first_other = first_other or line.strip()
    return f"kernel build: {(first_other or _last_error(text))[:300]}"


def _unpack_source(deb: Path, work: Path, say) -> Path:
    say(f"unpacking {deb.name}")
    x = work / "deb"
    _run(["dpkg-deb", "-x", str(deb), str(x)], f"dpkg-deb -x {deb.name}")
    tars = sorted((x / "usr" / "src").glob("linux-source-*.tar.*"))
    if not tars:
        raise KernelBuildError(f"kernel build: {deb.name} holds no usr/src/linux-source-*.tar.*")
    _run(["tar", "xf", str(tars[0]), "-C", str(work)], f"tar xf {tars[0].name}", timeout=900)
    shutil.rmtree(x, ignore_errors=True)
    trees = [p for p in work.iterdir() if p.is_dir() and p.name.startswith("linux-source-")]
    if len(trees) != 1:
        raise KernelBuildError(f"kernel build: {tars[0].name} did not unpack to one linux-source-* folder")
    return trees[0]


_BEGIN = "# l4slab: congestion controls built in (managed by l4slab kernel build)"
_END = "# l4slab: end"


def _sync_modules(src: Path, modules: list[Path], say) -> None:
    """Make ``net/ipv4/`` hold exactly ``modules`` among the l4slab-added files, each built in
    (``obj-y``), by a managed block at the end of ``net/ipv4/Makefile``; unchanged files keep
    their times, so make recompiles only what changed."""
    ipv4 = src / "net" / "ipv4"
    makefile = ipv4 / "Makefile"
    text = makefile.read_text()
    if _BEGIN in text:
        head, _, rest = text.partition(_BEGIN)
        block, _, tail = rest.partition(_END)
        previous = re.findall(r"obj-y \+= (\S+)\.o", block)
        text = head.rstrip("\n") + "\n" + tail.lstrip("\n")
    else:
        previous = []
    wanted = {m.stem for m in modules}
    for stem in previous:
        if stem not in wanted:
            (ipv4 / f"{stem}.c").unlink(missing_ok=True)
    for module in modules:
        target = ipv4 / module.name
        data = module.read_bytes()
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    block = "\n".join([_BEGIN, *[f"obj-y += {m.stem}.o" for m in modules], _END])
    new_text = text.rstrip("\n") + "\n\n" + block + "\n"
    if new_text != makefile.read_text():
        makefile.write_text(new_text)
    if modules:
        say("congestion controls built in: " + ", ".join(m.name for m in modules))


def _apply_patches(src: Path, say) -> None:
    for patch in sorted((FILES / "linux" / "patches").glob("*.patch")):
        say(f"applying {patch.name}")
        with open(patch, "rb") as stream:
            done = subprocess.run(
                ["patch", "-p1", "--forward", "--batch", "--silent"], cwd=src, stdin=stream, capture_output=True, text=True
            )
        if done.returncode != 0:
            raise KernelBuildError(
                f"kernel build: patch {patch.name} does not apply to {src.name}: {_last_error(done.stdout + done.stderr)}"
            )


def _configure(src: Path, out: Path, say) -> None:
    say("configuring: arch/um x86_64_defconfig + l4slab.config")
    out.mkdir(parents=True, exist_ok=True)
    fragment = FILES / "linux" / "l4slab.config"
    _run(["make", "-s", "ARCH=um", f"O={out}", "x86_64_defconfig"], "make x86_64_defconfig", cwd=src)
    _run(
        ["bash", str(src / "scripts" / "kconfig" / "merge_config.sh"), "-m", "-O", str(out), str(out / ".config"), str(fragment)],
        "merge_config.sh",
        cwd=src,
        env=dict(os.environ, ARCH="um"),
    )
    _run(["make", "-s", "ARCH=um", f"O={out}", "olddefconfig"], "make olddefconfig", cwd=src)
    config = set((out / ".config").read_text().splitlines())
    for line in fragment.read_text().splitlines():
        line = line.strip()
        if line.startswith("CONFIG_") and line.endswith("=y") and line not in config:
            raise KernelBuildError(
                f"kernel build: {line} of l4slab.config did not survive olddefconfig on {src.name} "
                "(a dependency missing or the symbol renamed)"
            )


def _make_kernel(
    src: Path, out: Path, jobs: int | None, say, full: bool = True, user_files: dict[str, tuple[str, str]] | None = None
) -> None:
    jobs = jobs or max(1, os.cpu_count() or 1)
    if full:
        say(f"compiling the kernel (make ARCH=um linux -j{jobs}; about 6-20 min on 2 cores, progress below)")
    else:
        say(f"compiling what changed in the cached kernel tree (make ARCH=um linux -j{jobs})")
    log_path = out / "build.log"
    cmd = ["nice", "-n", "5", "make", "ARCH=um", f"O={out}", f"-j{jobs}", "linux"]
    compiled = 0
    shown = -1
    tail: list[str] = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=src,
            env=dict(os.environ, **KBUILD_ENV),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            tail = (tail + [line.rstrip()])[-40:]
            if line.startswith("  CC "):
                compiled += 1
                if not full:
                    say(f"compiling {line.split()[-1]}")
                    continue
                pct = min(99, compiled * 100 // EXPECTED_OBJECTS)
                if pct // 5 != shown:
                    shown = pct // 5
                    say(f"compiling: {compiled} objects (~{pct} %)")
        rc = proc.wait()
    if rc != 0 and user_files:
        text = log_path.read_text(errors="replace")
        if any(rel in text for rel in user_files):
            raise KernelBuildError(_compile_error(text, user_files))
    if rc != 0 or not (out / "linux").exists():
        errors = [line for line in tail if "error" in line.lower()]
        raise KernelBuildError(
            f"kernel build: make ARCH=um linux failed ({(errors or tail or ['no output'])[-1].strip()[:240]}; log {log_path})"
        )


# --- the guest's user space ---------------------------------------------------------------


def _libs(binary: str) -> list[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+ld-linux\S*)", line)
        if m:
            libs.append(m.group(1))
    return libs


def _initramfs(target: Path, uapi_include: Path, debs: dict[str, Path], work: Path) -> dict[str, str]:
    image = cpio.Image()
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "lib64", "proc", "sys", "dev", "run", "tmp",
              "etc", "l4slab", "var", "root", "opt/sid/bin", "opt/sid/lib"):  # fmt: skip
        image.dir(d)
    image.symlink("var/run", "../run")
    image.file("init", (FILES / "guest" / "init").read_bytes(), 0o755)
    busybox = shutil.which("busybox")
    image.file("bin/busybox", Path(busybox).read_bytes(), 0o755)
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True).stdout.split()
    own = {"ip", "tc", "ss", "nstat", "sh", "busybox"}
    for applet in applets:
        if applet not in own:
            image.symlink(f"bin/{applet}", "busybox")
    tools: dict[str, str] = {"busybox": subprocess.run([busybox], capture_output=True, text=True).stdout.split("\n")[0]}

    def host_binary(path: str, dest: str) -> None:
        real = os.path.realpath(path)
        image.file(dest, Path(real).read_bytes(), 0o755)
        for lib in _libs(real):
            image.file(lib.lstrip("/"), Path(os.path.realpath(lib)).read_bytes(), 0o755, exist_ok=True)

    for name in ("dash", "iperf3", "tcpdump", "ethtool"):
        path = shutil.which(name)
        host_binary(path, path.lstrip("/"))
    image.symlink("bin/sh", shutil.which("dash"))
    tools["iperf3"] = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    tools["tcpdump"] = subprocess.run(["tcpdump", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    tools["ethtool"] = subprocess.run(["ethtool", "--version"], capture_output=True, text=True).stdout.split("\n")[0]

    # Debian sid's iproute2 (dualpi2 in tc) needs sid's glibc: its own loader runs it.
    sid = work / "sid"
    for package in ("iproute2", "libc6"):
        _run(["dpkg-deb", "-x", str(debs[package]), str(sid)], f"dpkg-deb -x {debs[package].name}")
    libdir = sid / "usr" / "lib" / "x86_64-linux-gnu"
    if not libdir.exists():
        libdir = sid / "lib" / "x86_64-linux-gnu"
    for lib in ("ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6"):
        image.file(f"opt/sid/lib/{lib}", (libdir / lib).resolve().read_bytes(), 0o755)
    for rel in ("usr/sbin/ip", "usr/sbin/tc", "usr/bin/ss", "usr/bin/nstat"):
        binary = sid / rel
        if not binary.exists():
            binary = sid / "sbin" / Path(rel).name
        name = Path(rel).name
        image.file(f"opt/sid/bin/{name}", binary.read_bytes(), 0o755)
        for lib in _libs(str(binary)):
            base = os.path.basename(lib)
            if base.startswith(("libc.so", "libm.so", "ld-linux")) or "not found" in lib:
                continue
            image.file(f"lib/x86_64-linux-gnu/{base}", Path(os.path.realpath(lib)).read_bytes(), 0o755, exist_ok=True)
        wrapper = (
            "#!/bin/sh\n"
            f"exec /opt/sid/lib/ld-linux-x86-64.so.2 --library-path /opt/sid/lib:/lib/x86_64-linux-gnu "
            f"/opt/sid/bin/{name} \"$@\"\n"
        )
        image.file(f"sbin/{name}", wrapper.encode(), 0o755)
    for folder in ("usr/share/iproute2", "etc/iproute2"):
        for path in sorted((sid / folder).rglob("*")) if (sid / folder).exists() else []:
            if path.is_file():
                image.file(str(path.relative_to(sid)), path.read_bytes(), 0o644, exist_ok=True)
    # ldd on a sid binary fails on bookworm's loader for missing symbol versions but lists
    # the libraries; the ones it could not find come from the host (libbpf, libelf, libmnl, ...).
    tools["iproute2"] = debs["iproute2"].name

    probe_src = FILES / "guest" / "probe.c"
    probe_bin = work / "l4slab-probe"
    _run(
        ["gcc", "-O2", "-static", "-Wall", "-Wextra", f"-I{uapi_include}", str(probe_src), "-o", str(probe_bin)],
        "compiling guest/probe.c",
    )
    image.file("usr/local/bin/l4slab-probe", probe_bin.read_bytes(), 0o755)
    flow_src = FILES / "guest" / "flow.c"
    flow_bin = work / "l4slab-flow"
    _run(["gcc", "-O2", "-static", "-Wall", "-Wextra", str(flow_src), "-o", str(flow_bin)], "compiling guest/flow.c")
    image.file("usr/local/bin/l4slab-flow", flow_bin.read_bytes(), 0o755)
    image.file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
    image.file("etc/group", b"root:x:0:\n", 0o644)
    image.file("etc/hosts", b"127.0.0.1 localhost\n", 0o644)
    image.file("etc/services", b"", 0o644, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    image.write(tmp)
    tmp.rename(target)
    return tools
