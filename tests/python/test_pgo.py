"""The profile-guided build (``tools/pgo-profile``, docs/performance.md): the profile the
extension was built with must name the extension's own engine functions.

LLVM applies a profile to a function only when the profile names its symbol, and a Rust
symbol carries a hash of its crate's build (features, dependencies). Trained on a binary
whose engine crate resolved differently (an example of ``l4slab-core`` itself, whose
dev-dependencies change the features of the engine's dependencies), the profile names
none of the extension's functions and the build is silently the plain one: that is what
this test catches."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
ENGINE_SYMBOL = re.compile(r"_ZN11l4slab_core[A-Za-z0-9_$.]*17h[0-9a-f]{16}E")


def _profile() -> Path:
    flags = TARGET / "pgo" / "rustflags"
    text = flags.read_text().strip() if flags.exists() else ""
    if not text.startswith("-Cprofile-use="):
        pytest.skip(f"no profile-guided build here ({flags} empty or missing: no llvm-profdata, or L4SLAB_PGO=0)")
    return Path(text.removeprefix("-Cprofile-use="))


def _llvm_profdata() -> Path:
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    host = re.search(r"^host: (\S+)", subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout, re.M)
    return Path(sysroot) / "lib" / "rustlib" / host.group(1) / "bin" / "llvm-profdata"


def test_the_profile_names_the_extensions_engine_functions():
    profile = _profile()
    assert profile.exists(), f"{profile} (named by {TARGET / 'pgo' / 'rustflags'}) is missing"
    if shutil.which("nm") is None:
        pytest.skip("no nm (binutils) to read the extension's symbols")
    from l4slab import _core

    shown = subprocess.run(
        [str(_llvm_profdata()), "show", "--all-functions", str(profile)], capture_output=True, text=True, check=True
    ).stdout
    in_profile = set(ENGINE_SYMBOL.findall(shown))
    symbols = subprocess.run(["nm", "--defined-only", _core.__file__], capture_output=True, text=True, check=True).stdout
    in_extension = set(ENGINE_SYMBOL.findall(symbols))
    assert len(in_extension) > 100, f"{len(in_extension)} engine symbols in {_core.__file__}"
    # The engine functions the extension keeps out of line, by their full symbol: nearly all
    # are in the profile (measured: 328 of 358); a profile of a differently resolved crate
    # shares none of them.
    shared = len(in_profile & in_extension)
    assert shared >= 0.8 * len(in_extension), (
        f"the profile {profile.name} names {shared} of the extension's {len(in_extension)} engine functions: "
        "the training runner's engine crate no longer resolves as the extension's (tools/pgo-profile)"
    )
