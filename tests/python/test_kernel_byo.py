"""Bring your own congestion control: a scenario's ``[kernel]`` table
names a ``tcp_NAME.c`` of the user's (and kernel patches); its flows name the CC it registers.

Without a guest kernel: the loader accepts the name (read from the file's ``struct
tcp_congestion_ops``), the engine refuses it in one line, every bad file is one line naming
it, the resolved config carries each file's content hash (a study's run id follows the
content), the testbed runs the CC, and a user's patch journal is reverted. With the cached
guest (``l4slab kernel build``): ``l4sreno``, a Reno written here, is compiled into the
guest incrementally and runs; a compile error is one line naming the file and the
compiler's message; a patch that does not apply is one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from l4slab.errors import EngineError, ScenarioError
from l4slab.scenario import load_scenario, scenario_from_dict
from l4slab.scenario.resolve import resolving_for

L4SRENO = textwrap.dedent(
    """\
    // SPDX-License-Identifier: GPL-2.0
    /* l4sreno: Reno under a name of its own (tests/python/test_kernel_byo.py) */
    #include <linux/module.h>
    #include <net/tcp.h>

    static struct tcp_congestion_ops l4sreno __read_mostly = {
    \t.ssthresh\t= tcp_reno_ssthresh,
    \t.cong_avoid\t= tcp_reno_cong_avoid,
    \t.undo_cwnd\t= tcp_reno_undo_cwnd,
    \t.owner\t\t= THIS_MODULE,
    \t.name\t\t= "l4sreno",
    };

    static int __init l4sreno_register(void)
    {
    \treturn tcp_register_congestion_control(&l4sreno);
    }

    static void __exit l4sreno_unregister(void)
    {
    \ttcp_unregister_congestion_control(&l4sreno);
    }

    module_init(l4sreno_register);
    module_exit(l4sreno_unregister);
    MODULE_LICENSE("GPL");
    """
)

SCENARIO = textwrap.dedent(
    """\
    name = "byo"
    duration = "2s"
    [kernel]
    cc_sources = ["cc/tcp_l4sreno.c"]
    [bottleneck]
    rate = "20Mbit"
    qdisc = "bfifo"
    buffer = "1bdp"
    [[flows]]
    cc = "l4sreno"
    rtt = "10ms"
    """
)


@pytest.fixture
def byo(tmp_path: Path) -> Path:
    """A scenario folder: scen.toml naming cc/tcp_l4sreno.c (a relative path)."""
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "tcp_l4sreno.c").write_text(L4SRENO)
    (tmp_path / "scen.toml").write_text(SCENARIO)
    return tmp_path


def _error(data: dict) -> str:
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- the scenario -------------------------------------------------------------------------------


def test_a_scenario_accepts_the_cc_its_own_source_registers(byo):
    scenario = load_scenario(byo / "scen.toml")
    assert scenario.kernel.cc_sources == [str(byo / "cc" / "tcp_l4sreno.c")]  # relative to the file
    assert scenario.flows[0].cc == "l4sreno"
    with resolving_for("kernel"):
        config = scenario.resolve()
    assert config["flows"][0]["cc"] == "l4sreno"
    [source] = config["kernel"]["cc_sources"]
    assert source["file"] == "tcp_l4sreno.c" and source["ccs"] == ["l4sreno"] and len(source["sha256"]) == 64
    assert str(byo) not in str(config)  # content, not location: the config holds no path


def test_the_engine_refuses_a_kernel_only_cc_in_one_line(byo):
    wanted = (
        "flows[0].cc: 'l4sreno' is a kernel-only congestion control from kernel.cc_sources; "
        "run it with --backend kernel"
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(byo / "scen.toml").resolve()
    assert str(info.value) == wanted
    done = subprocess.run(
        [sys.executable, "-m", "l4slab", "run", str(byo / "scen.toml")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"l4slab: error: {wanted}"]


@pytest.mark.parametrize(
    ("kernel", "cc", "expected"),
    [
        ({"cc_sources": ["nowhere/tcp_x.c"]}, "cubic", "kernel.cc_sources[0]: 'nowhere/tcp_x.c' is not a file"),
        ({"cc_sources": ["{d}/mycc.c"]}, "cubic", "kernel.cc_sources[0]: 'mycc.c' is not named tcp_NAME.c"),
        ({"cc_sources": ["{d}/tcp_none.c"]}, "cubic", "kernel.cc_sources[0]: tcp_none.c registers no tcp_congestion"),
        ({"cc_sources": ["{d}/tcp_clash.c"]}, "cubic", "kernel.cc_sources[0]: tcp_clash.c: .name = 'cubic' is a"),
        ({"cc_sources": ["{d}/tcp_engine.c"]}, "cubic", "kernel.cc_sources[0]: tcp_engine.c: .name = 'bbr3' is a"),
        ({"cc_sources": ["{d}/tcp_cubic.c"]}, "cubic", "kernel.cc_sources[0]: tcp_cubic.c would replace a file"),
        ({"patches": ["{d}/tcp_none.c"]}, "cubic", "kernel.patches[0]: tcp_none.c is not a unified diff"),
        ({"patches": ["{d}/make.patch"]}, "cubic", "kernel.patches[0]: make.patch: changes net/ipv4/Makefile;"),
        ({}, "l4sreno", "flows[0].cc: 'l4sreno' is not a known congestion control"),
        ({"cc_source": ["{d}/tcp_x.c"]}, "cubic", "kernel.cc_source: unknown key (did you mean 'cc_sources'?)"),
    ],
)
def test_a_bad_kernel_file_or_an_unknown_cc_is_one_line(tmp_path, kernel, cc, expected):
    ops = 'static struct tcp_congestion_ops x = {{ .name = "{}", }};\n'
    (tmp_path / "mycc.c").write_text(ops.format("mycc"))
    (tmp_path / "tcp_none.c").write_text('/* .name = "commented" */ int x;\n')
    (tmp_path / "tcp_clash.c").write_text(ops.format("cubic"))
    (tmp_path / "tcp_engine.c").write_text(ops.format("bbr3"))
    (tmp_path / "tcp_cubic.c").write_text(ops.format("mine"))
    (tmp_path / "make.patch").write_text("--- a/net/ipv4/Makefile\n+++ b/net/ipv4/Makefile\n@@ -1 +1 @@\n-a\n+b\n")
    table = {k: [p.format(d=tmp_path) for p in v] for k, v in kernel.items()}
    data = {"duration": "1s", "bottleneck": {"rate": "10Mbit"}, "flows": [{"cc": cc, "rtt": "10ms"}]}
    if table:
        data["kernel"] = table
    assert _error(data).startswith(expected)


def test_a_study_run_id_follows_the_sources_content(byo):
    """The resolved config holds each file's hash: a changed CC is a new run, never a
    result of the other version; for the engine the study is refused at planning."""
    from l4slab.study.runs import _for_backend
    from l4slab.study.spec import load_study

    (byo / "study.toml").write_text(
        'base = "scen.toml"\n[study]\nname = "byo"\ntrials = 1\n[factors]\n"bottleneck.rate" = ["20Mbit", "40Mbit"]\n'
    )

    def run_ids() -> list[str]:
        with resolving_for("kernel"):
            return [r.id for r in _for_backend(load_study(byo / "study.toml"), "kernel").runs]

    first = run_ids()
    assert len(set(first)) == 2 and run_ids() == first
    source = byo / "cc" / "tcp_l4sreno.c"
    source.write_text(source.read_text().replace("tcp_reno_undo_cwnd", "tcp_reno_undo_cwnd /* v2 */"))
    assert set(run_ids()).isdisjoint(first)
    refused = r"^point bottleneck\.rate=20Mbit: flows\[0\]\.cc: 'l4sreno' is a kernel-only"
    with pytest.raises(ScenarioError, match=refused):
        load_study(byo / "study.toml")


def test_the_testbed_runs_the_own_cc_and_refuses_cc_params(byo):
    from l4slab.kernel.run import resolve
    from l4slab.kernel.testbed import KernelRefused, check_config, plan

    scenario, config = resolve(str(byo / "scen.toml"))
    tb = plan(scenario, config, offsets_ns=[0])
    assert tb.flows[0].cc == "l4sreno" and tb.sysctls["s0"]["tcp_congestion_control"] == "l4sreno"
    assert "--cc l4sreno " in tb.script and "grep -qw l4sreno /proc/sys/net/ipv4/tcp_available" in tb.script
    config["flows"][0]["cc_params"] = {"beta": 1}
    with pytest.raises(KernelRefused, match=r"^flows\[0\]\.cc_params: "):
        check_config(config, scenario)
    with pytest.raises(ScenarioError, match=r"^flows\[0\]\.cc_params: 'l4sreno' is your own congestion control"):
        resolve(str(byo / "scen.toml"), overrides={"flows[0].cc_params": {"beta": 1}})


def test_a_patch_left_applied_by_a_killed_build_is_reverted(tmp_path):
    from l4slab.kernel import build as kb

    tree = tmp_path / "tree"
    (tree / "src" / "net").mkdir(parents=True)
    (tree / "tree.json").write_text("{}")
    original = "one\ntwo\nthree\n"
    (tree / "src" / "net" / "f.c").write_text(original)
    patch = "--- a/net/f.c\n+++ b/net/f.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
    said: list[str] = []
    (tmp_path / "x.patch").write_text(patch)
    applied = kb._user_patches_applied(tree, tree / "src", [(tmp_path / "x.patch", "h")], said.append)
    applied.__enter__()  # a build that dies here leaves the journal and the patched file
    assert (tree / "src" / "net" / "f.c").read_text() != original and (tree / kb._APPLIED).is_dir()
    kb._revert_user_patches(tree, said.append)  # the next build, under the tree's lock
    assert (tree / "src" / "net" / "f.c").read_text() == original and not (tree / kb._APPLIED).exists()
    assert (tree / "tree.json").exists()
    # a patch that no longer reverts leaves an unknown tree: marked for a full rebuild
    applied.__enter__()
    (tree / "src" / "net" / "f.c").write_text("changed by hand\n")
    kb._revert_user_patches(tree, said.append)
    assert not (tree / "tree.json").exists() and "did not revert" in said[-1]


def test_the_example_loads_and_registers_its_cc():
    root = Path(__file__).resolve().parents[2]
    scenario = load_scenario(root / "examples" / "kernel" / "l4sdemo.toml")
    assert scenario.flows[0].cc == "l4sdemo" and Path(scenario.kernel.cc_sources[0]).name == "tcp_l4sdemo.c"


# --- on the real kernel -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_kernel():
    from l4slab.kernel.build import find_cached

    found = find_cached() if sys.platform.startswith("linux") and not os.environ.get("L4SLAB_TEST_KERNEL") else None
    if found is None:
        pytest.skip("no guest kernel cached for the project's files: run `l4slab kernel build`")
    return found


def test_kernel_builds_and_runs_a_cc_of_your_own(base_kernel, byo):
    from l4slab.kernel.run import run_kernel

    result = run_kernel(str(byo / "scen.toml"))
    summary, block = result.summary, result.summary["kernel"]
    assert block["modules"] == ["l4sreno"] and result.meta["flows"][0]["sender_cc"] == "l4sreno"
    assert summary["flows"][0]["cc"] == "l4sreno" and summary["flows"][0]["goodput_mbps"] > 15.0
    assert block["user_inputs"]["cc_sources"][0]["file"] == "tcp_l4sreno.c"
    kernel = result.meta["kernel"]
    assert [Path(p).name for p in kernel["user_modules"]] == ["tcp_l4sreno.c"]
    assert kernel["source_version"] == base_kernel.meta["source_version"]  # a variant, not a new source


def test_kernel_a_compile_error_is_one_line_naming_the_file(base_kernel, byo):
    from l4slab.kernel.run import run_kernel

    source = byo / "cc" / "tcp_l4sreno.c"
    source.write_text(source.read_text().replace("tcp_reno_ssthresh,", "tcp_reno_ssthresh_typo,"))
    with pytest.raises(EngineError) as info:
        run_kernel(str(byo / "scen.toml"))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"kernel cc_sources: {source}:7:")
    assert "error:" in message and "tcp_reno_ssthresh_typo" in message


def test_kernel_a_patch_that_does_not_apply_is_one_line(base_kernel, byo):
    from l4slab.kernel.run import run_kernel

    (byo / "bad.patch").write_text(
        "--- a/net/ipv4/tcp_cong.c\n+++ b/net/ipv4/tcp_cong.c\n@@ -1,3 +1,3 @@\n no such\n-line\n+LINE\n here\n"
    )
    scenario = (byo / "scen.toml").read_text().replace("[kernel]\n", '[kernel]\npatches = ["bad.patch"]\n')
    (byo / "scen.toml").write_text(scenario)
    with pytest.raises(EngineError) as info:
        run_kernel(str(byo / "scen.toml"))
    message = str(info.value)
    assert "\n" not in message and message.startswith("kernel patches: bad.patch does not apply to the kernel tree")
