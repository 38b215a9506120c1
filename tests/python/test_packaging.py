"""Packaging: the wheel is tagged abi3 for the oldest supported Python and
manylinux, consistent with ``requires-python``; an sdist builds; and (slow) the wheel installs
into a fresh venv with no Rust on PATH and runs the demo."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MATURIN = shutil.which("maturin", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def _pyproject() -> str:
    return (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_abi3_floor_matches_requires_python():
    # Regression: abi3-py39 against requires-python >= 3.10.
    floor = re.search(r'requires-python = ">=3\.(\d+)"', _pyproject()).group(1)
    binding = (REPO / "crates" / "l4slab-py" / "Cargo.toml").read_text(encoding="utf-8")
    assert re.findall(r'"abi3-py3(\d+)"', binding) == [floor]
    assert f'target-version = "py3{floor}"' in _pyproject()


@pytest.mark.skipif(MATURIN is None, reason="maturin is not installed")
def test_sdist_has_the_sources(tmp_path):
    done = subprocess.run([MATURIN, "sdist", "--out", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    (sdist,) = tmp_path.glob("l4slab-*.tar.gz")
    import tarfile

    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in ("pyproject.toml", "Cargo.lock", "crates/l4slab-core/src/lib.rs", "crates/l4slab-py/src/lib.rs",
                   "python/l4slab/__init__.py", "python/l4slab/scenarios/reference.toml", "README.md"):  # fmt: skip
        assert needed in names, needed


def _zig_available() -> bool:
    return subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(MATURIN is None, reason="maturin is not installed")
def test_wheel_installs_without_rust_and_runs_the_demo(tmp_path):
    if not _zig_available():
        pytest.skip("ziglang is not installed (pip install ziglang): needed for a manylinux wheel")
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    build = [
        MATURIN,
        "build",
        "--release",
        "--compatibility",
        "manylinux_2_28",
        "--zig",
        "--out",
        str(tmp_path / "dist"),
    ]
    done = subprocess.run(build, capture_output=True, text=True, cwd=REPO, env=env, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.endswith("-cp310-abi3-manylinux_2_28_x86_64.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        assert "Requires-Python: >=3.10" in archive.read(meta).decode()
        assert any(n.startswith("l4slab/_core") and n.endswith(".so") for n in archive.namelist())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # No cargo, rustc or maturin on PATH: only the venv and the system's basic tools.
    bare = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CARGO_HOME", "RUSTUP_HOME")}
    bare["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])
    assert shutil.which("cargo", path=bare["PATH"]) is None and shutil.which("rustc", path=bare["PATH"]) is None
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)]
    done = subprocess.run(pip, capture_output=True, text=True, env=bare, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    demo = [str(venv / "bin" / "l4slab"), "demo", "--out", str(tmp_path / "demo"), "--duration", "2s"]
    done = subprocess.run(demo, capture_output=True, text=True, env=bare, cwd=tmp_path, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "demo" / "report" / "report.md").is_file()
    assert (tmp_path / "demo" / "report" / "report.html").is_file()
    assert done.stdout.splitlines()[-1] == f"open {tmp_path / 'demo' / 'report' / 'report.html'} in a browser"


def _can_emulate() -> str | None:
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        return "emulated runs need root and /dev/net/tun"
    if not shutil.which("iperf3"):
        return "emulated runs need iperf3 (apt-get install iperf3)"
    return None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cargo") is None, reason="pip install . builds the extension: needs cargo")
def test_pip_install_brings_the_emulator(tmp_path):
    """``pip install .`` into a fresh venv, then, with no cargo, rustc or ``l4slab-emu`` on PATH
    and outside the source tree: ``l4slab emulate examples/emulator/cubic-20m-20ms-bfifo.toml``
    runs through the emulator built into the extension (``python -m l4slab._emu``), and the
    command-flow worked example (``udp-prague-vs-cubic-20m-20ms-dualpi2.toml``) runs the
    project's UDP-Prague program from the ``l4slab-udp-prague`` console script the install put
    in the venv (the extension's ``udp_prague_main``). Both with ``--accept-late``: what is
    checked are counts, which a host stall does not change."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "L4SLAB_EMU")}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO)]
    done = subprocess.run(pip, capture_output=True, text=True, env=env, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    bare = {k: v for k, v in env.items() if k not in ("CARGO_HOME", "RUSTUP_HOME", "CARGO_TARGET_DIR")}
    bare["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
    for tool in ("cargo", "rustc", "l4slab-emu"):
        assert shutil.which(tool, path=bare["PATH"]) is None, tool
    program = shutil.which("l4slab-udp-prague", path=bare["PATH"])
    assert program == str(venv / "bin" / "l4slab-udp-prague"), program
    done = subprocess.run([program, "--help"], capture_output=True, text=True, env=bare, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: l4slab-udp-prague send"), done.stdout + done.stderr
    probe = [str(venv / "bin" / "python"), "-c", "from l4slab.emulate.preflight import binary_argv; print(binary_argv())"]
    done = subprocess.run(probe, capture_output=True, text=True, env=bare, cwd=tmp_path, timeout=120)
    assert done.returncode == 0 and "l4slab._emu" in done.stdout, done.stdout + done.stderr
    reason = _can_emulate()
    if reason:
        pytest.skip(f"installed with the emulator; not run: {reason}")
    scenario = REPO / "examples" / "emulator" / "cubic-20m-20ms-bfifo.toml"
    out = tmp_path / "emu"
    run = [str(venv / "bin" / "l4slab"), "emulate", str(scenario), "--out", str(out), "--set", "duration=3s"]
    done = subprocess.run([*run, "--accept-late"], capture_output=True, text=True, env=bare, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "emulate" and summary["flows"][0]["goodput_mbps"] > 10
    example = REPO / "examples" / "emulator" / "udp-prague-vs-cubic-20m-20ms-dualpi2.toml"
    out = tmp_path / "udp-prague"
    run = [str(venv / "bin" / "l4slab"), "emulate", str(example), "--out", str(out), "--accept-late"]
    done = subprocess.run(run, capture_output=True, text=True, env=bare, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    got = json.loads((out / "commands" / "flow-1" / "out" / "recv.json").read_text())
    view = summary["emulator"]["flows"][1]
    assert summary["flows"][1]["kind"] == "command" and summary["flows"][1]["cc"] == "l4slab-udp-prague"
    assert got["packets_received"] > 1000 and got["ce_packets"] > 0, got
    assert view["ce_delivered"] == pytest.approx(got["ce_packets"], rel=0.01)
