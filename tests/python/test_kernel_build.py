"""The kernel backend's build pipeline (l4slab.kernel.build, .cpio, .guest): the parts that need
no network and no kernel, and, where a guest is cached, the cache hit and one boot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import recording_popen
from l4slab.kernel import build as kb
from l4slab.kernel import cpio
from l4slab.kernel import guest as kg

ROOT = Path(__file__).resolve().parents[2]


# --- the initramfs writer -----------------------------------------------------------------


def test_cpio_image_lists_back_with_cpio(tmp_path):
    """The newc image is what GNU cpio reads: names, modes, symlink targets and contents."""
    if shutil.which("cpio") is None:
        pytest.skip("GNU cpio is not installed (apt-get install cpio)")
    image = cpio.Image()
    image.file("usr/local/bin/tool", b"#!/bin/sh\necho hi\n", 0o755)
    image.file("etc/odd", b"x" * 5, 0o600)  # a length that needs padding
    image.symlink("bin/sh", "/usr/bin/dash")
    image.dir("run")
    path = tmp_path / "i.cpio"
    image.write(path)
    listing = subprocess.run(["cpio", "-itv"], stdin=open(path, "rb"), capture_output=True, text=True, check=True).stdout
    lines = {line.split()[-1] if "->" not in line else line.split()[-3]: line for line in listing.splitlines()}
    assert set(lines) >= {"usr", "usr/local", "usr/local/bin", "usr/local/bin/tool", "etc/odd", "bin/sh", "run"}
    assert lines["usr/local/bin/tool"].startswith("-rwxr-xr-x")
    assert lines["etc/odd"].startswith("-rw-------")
    assert lines["bin/sh"].startswith("lrwxrwxrwx") and lines["bin/sh"].endswith("-> /usr/bin/dash")
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-idm", "--quiet"], stdin=open(path, "rb"), cwd=out, check=True)
    assert (out / "usr/local/bin/tool").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert (out / "etc/odd").read_bytes() == b"xxxxx"


def test_cpio_image_is_deterministic_and_refuses_bad_names(tmp_path):
    def make(p):
        image = cpio.Image()
        image.file("a/b", b"data")
        image.symlink("c", "a/b")
        image.write(p)
        return p.read_bytes()

    assert make(tmp_path / "1") == make(tmp_path / "2")
    image = cpio.Image()
    with pytest.raises(ValueError, match="not a relative path"):
        image.file("../etc/passwd", b"")
    image.file("x", b"")
    with pytest.raises(ValueError, match="added twice"):
        image.file("x", b"")


# --- inputs, cache keys, modules ----------------------------------------------------------


def test_project_inputs_cover_every_guest_file():
    files, digest = kb.project_inputs()
    assert "linux/l4slab.config" in files and "guest/init" in files and "guest/probe.c" in files
    guest = {f"guest/{p.name}" for p in (kb.FILES / "guest").iterdir() if p.is_file()}
    assert guest <= set(files), f"guest files the cache key misses: {sorted(guest - set(files))}"
    assert any(name.startswith("linux/patches/") for name in files)
    assert any(name.startswith("linux/net/tcp_") for name in files), "the project's Prague module is an input"
    assert len(digest) == 64 and kb.project_inputs()[1] == digest


def test_tree_key_reads_the_source_the_settings_and_the_patches(tmp_path, monkeypatch):
    assert kb._tree_key("7.2.13-1") == kb._tree_key("7.2.13-1")
    assert kb._tree_key("7.2.13-1") != kb._tree_key("7.3.1-1")
    files = tmp_path / "kernel"
    shutil.copytree(kb.FILES / "linux", files / "linux")
    monkeypatch.setattr(kb, "FILES", files)
    key = kb._tree_key("7.2.13-1")
    config = files / "linux" / "l4slab.config"
    config.write_text("# a reworded comment\n" + config.read_text().replace("# ", "#  "))
    assert kb._tree_key("7.2.13-1") == key, "a comment is no new kernel"
    config.write_text(config.read_text() + "CONFIG_NET_SCH_CAKE=y\n")
    assert kb._tree_key("7.2.13-1") != key
    key = kb._tree_key("7.2.13-1")
    (files / "linux" / "patches" / "0009-x.patch").write_text("--- a/x\n+++ b/x\n")
    assert kb._tree_key("7.2.13-1") != key


def test_sync_modules_manages_one_block_and_removes_what_left(tmp_path):
    src = tmp_path / "src"
    ipv4 = src / "net" / "ipv4"
    ipv4.mkdir(parents=True)
    (ipv4 / "Makefile").write_text("obj-y += tcp.o\n")
    a, b = tmp_path / "tcp_alpha.c", tmp_path / "tcp_beta.c"
    a.write_text('static struct tcp_congestion_ops x = { .name = "alpha" };\n')
    b.write_text('static struct tcp_congestion_ops y = { .name = "beta" };\n')
    kb._sync_modules(src, [a, b], lambda _: None)
    text = (ipv4 / "Makefile").read_text()
    assert text.count(kb._BEGIN) == 1 and "obj-y += tcp_alpha.o" in text and "obj-y += tcp_beta.o" in text
    assert (ipv4 / "tcp_beta.c").exists()
    mtime = (ipv4 / "tcp_alpha.c").stat().st_mtime_ns
    kb._sync_modules(src, [a], lambda _: None)
    text = (ipv4 / "Makefile").read_text()
    assert text.count(kb._BEGIN) == 1 and "tcp_beta" not in text and not (ipv4 / "tcp_beta.c").exists()
    assert text.startswith("obj-y += tcp.o\n")
    assert (ipv4 / "tcp_alpha.c").stat().st_mtime_ns == mtime, "an unchanged module keeps its time (no recompile)"


@pytest.mark.parametrize(
    ("name", "text", "refusal"),
    [
        ("tcp_none.c", None, "is not a file"),
        ("mycc.c", '.name = "mycc"', "tcp_NAME.c"),
        ("tcp_cubic.c", '.name = "cubic"', "would replace"),
        ("tcp_empty.c", "int x;\n", "registers no tcp_congestion_ops"),
    ],
)
def test_a_bad_user_module_is_refused_in_one_line(tmp_path, name, text, refusal):
    module = tmp_path / name
    if text is not None:
        module.write_text(text)
    with pytest.raises(kb.KernelBuildError, match=refusal) as err:
        kb._user_modules([module])
    assert "\n" not in str(err.value)


def test_a_user_module_is_hashed_and_its_cc_named(tmp_path):
    good = tmp_path / "tcp_mine.c"
    good.write_text('static struct tcp_congestion_ops o = { .name = "mine" };')
    [(path, digest)] = kb._user_modules([good])
    assert path == good and len(digest) == 64
    assert kb._cc_names([good]) == {"tcp_mine.c": ["mine"]}


def test_debian_mirror_from_the_environment_and_missing_host_tools(monkeypatch):
    monkeypatch.setenv("L4SLAB_DEBIAN_MIRROR", "http://mirror.invalid/debian/")
    assert kb.debian_mirror() == "http://mirror.invalid/debian"
    monkeypatch.setattr(kb, "HOST_TOOLS", {"no-such-tool-l4slab": "no-such-package"})
    with pytest.raises(kb.KernelBuildError) as err:
        kb.check_host()
    assert str(err.value) == (
        "kernel build: missing host packages: no-such-package (Debian: apt-get install no-such-package)"
    )


def test_unreachable_mirror_is_one_line(tmp_path, monkeypatch):
    """No network to the mirror: apt-get update's failure becomes one line naming the mirror."""
    if shutil.which("apt-get") is None:
        pytest.skip("no apt-get")
    monkeypatch.setenv("L4SLAB_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    apt = kb._Apt(tmp_path / "apt", kb.debian_mirror())
    t0 = time.monotonic()
    with pytest.raises(kb.KernelBuildError) as err:
        apt.update()
        apt.newest_source()  # an update that "succeeds" with no lists still finds nothing
    assert time.monotonic() - t0 < 120
    message = str(err.value)
    assert "\n" not in message and ("127.0.0.1:9" in message or "offers no linux-source" in message)


def test_status_without_a_cache_is_one_line(tmp_path):
    env = dict(os.environ, L4SLAB_KERNEL_CACHE=str(tmp_path / "empty"))
    done = subprocess.run([sys.executable, "-m", "l4slab", "kernel", "status"], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("l4slab: error: no guest kernel")


def test_guest_bounds_are_checked_before_anything_runs(tmp_path):
    fake = kb.Kernel(directory=tmp_path, linux=tmp_path / "linux", initramfs=tmp_path / "i.cpio", release="x")
    with pytest.raises(kg.GuestFailed, match="limit_s"):
        kg.boot(fake, tmp_path / "run", "true", limit_s=0)
    for seed in (-1, 2**64, 1.5, True):
        with pytest.raises(kg.GuestFailed, match=r"^guest seed: .* is not an integer in 0\.\.2\^64-1$"):
            kg.boot(fake, tmp_path / "run", "true", limit_s=1, seed=seed)


# --- with a cached guest ------------------------------------------------------------------

CACHED = kb.find_cached()
needs_guest = pytest.mark.skipif(CACHED is None, reason="no guest kernel cached (make kernel / l4slab kernel build)")


@needs_guest
def test_second_build_is_a_cache_hit_in_under_five_seconds():
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "l4slab", "kernel", "build", "--quiet"], capture_output=True, text=True, timeout=60
    )
    wall = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    assert wall < 5.0, f"cache hit took {wall:.1f} s"
    assert CACHED.release in done.stdout
    meta = CACHED.meta
    assert meta["source_package"].startswith("linux-source-7.") and meta["release"].startswith("7.")
    assert "prague" in {n for names in meta["congestion_controls"].values() for n in names}


@needs_guest
def test_guest_boots_runs_its_script_and_leaves_nothing(tmp_path, monkeypatch):
    made: list[str] = []  # the guest's own temporary directories (not other tests' running beside)
    mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args, **kwargs):
        made.append(mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    script = (
        "cat /proc/sys/net/ipv4/tcp_available_congestion_control > /l4slab/ccs\n"
        "tc qdisc add dev lo root dualpi2 && tc qdisc show dev lo > /l4slab/qdisc\n"
        "exit 3\n"
    )
    run_dir = tmp_path / "run dir"  # no host path is on the kernel's command line: white space is fine
    run = kg.boot(CACHED, run_dir, script, limit_s=20)
    assert run.rc == 3 and run.release == CACHED.release
    ccs = (run_dir / "ccs").read_text().split()
    assert {"cubic", "dctcp", "bbr", "prague"} <= set(ccs)
    assert "dualpi2" in (run_dir / "qdisc").read_text()
    assert made and [d for d in made if Path(d).exists()] == [], "the guest's temporary directory was removed"
    assert str(tmp_path) not in (run_dir / "dmesg.txt").read_text()  # the command line, as the kernel logged it


@needs_guest
def test_a_hanging_guest_ends_at_its_wall_bound_in_one_line(tmp_path, monkeypatch):
    """A script that never ends (in virtual time too: it spins without sleeping) is killed
    at the wall bound; nothing of it is left running."""
    started = recording_popen(monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(kg.GuestFailed) as err:
        kg.boot(CACHED, tmp_path, "while :; do :; done\n", limit_s=600, wall_limit_s=4)
    assert time.monotonic() - t0 < 20
    assert "\n" not in str(err.value) and "wall bound of 4 s" in str(err.value)
    assert started and not any(kg._group_alive(p.pid) for p in started)  # UML's process group is gone


def test_a_kernel_run_id_follows_the_guests_files(monkeypatch):
    """A study's kernel-backend run ids hash the guest's own files: another Prague module or
    config is another run, never a resumed one."""
    from l4slab.study import runs

    config = {"seed": 1}
    assert runs.run_id(config, "m", "kernel", "a") != runs.run_id(config, "m", "kernel", "b")
    assert runs.run_id(config, "m", "kernel", "a") != runs.run_id(config, "m", "emulate")
    assert runs.run_id(config, "m", "sim") != runs.run_id(config, "m2", "sim")
    spec = runs.load_study("kernel-differential", panels=["dctcp-l"])
    first = runs._for_backend(spec, "kernel").runs[0].id
    monkeypatch.setattr(kb, "project_inputs", lambda: ({}, "another guest"))
    assert runs._for_backend(spec, "kernel").runs[0].id != first
