"""``l4slab plot RUN_DIR``: flent-style figures of a run and ``run.html``; the
per-packet trace names DualPI2's queues C and L as the summary does."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_here, requires_engine
from study_texts import prague_vs_cubic

REPO = Path(__file__).resolve().parents[2]

SCENARIO = """
name = "plot-pair"
duration = "2s"
trace_sojourn = true
[bottleneck]
rate = "100Mbit"
qdisc = "dualpi2 target 5ms"
[[flows]]
cc = "prague"
rtt = "10ms"
label = "prague $x$"
[[flows]]
cc = "cubic"
rtt = "10ms"
count = 2
"""


def l4slab(*args):
    return cli_here(*args, cwd=REPO)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    pytest.importorskip("l4slab._core")
    import l4slab

    out = tmp_path_factory.mktemp("plot") / "run"
    l4slab.run(SCENARIO).write(out)
    return out


@requires_engine
def test_the_sojourn_trace_names_dualpi2_queues_c_and_l(run_dir):
    import pandas as pd

    trace = pd.read_parquet(run_dir / "sojourn.parquet")
    assert set(trace["class"]) == {"C", "L"}
    # Prague (flow 0, ECT(1)) goes to L, CUBIC (no ECN) to C.
    by_flow = trace.groupby("flow")["class"].agg(lambda s: set(s))
    assert by_flow[0] == {"L"} and by_flow[1] == {"C"} and by_flow[2] == {"C"}


@requires_engine
def test_plot_writes_every_figure_and_run_html(run_dir):
    done = l4slab("plot", str(run_dir))
    assert done.returncode == 0, done.stderr
    from l4slab.analysis.runplots import FIGURES

    for stem in FIGURES:
        for fmt in ("png", "svg"):
            assert (run_dir / "plots" / f"{stem}.{fmt}").stat().st_size > 1000
    page = (run_dir / "run.html").read_text(encoding="utf-8")
    assert page.count("<svg") == len(FIGURES) and "missing figure" not in page
    # Flow labels (not ids) in legends, with ``#id`` where a label repeats; queues C and L.
    goodput = (run_dir / "plots" / "goodput.svg").read_text(encoding="utf-8")
    assert "prague $x$" in goodput and "cubic #1" in goodput and "cubic #2" in goodput
    ccdf = (run_dir / "plots" / "ccdf.svg").read_text(encoding="utf-8")
    assert "queue C" in ccdf and "queue L" in ccdf
    for unit in ("goodput (Mbit/s)", "cwnd (packets)", "sRTT (ms)", "sojourn time (ms)", "packets per second"):
        assert unit in page


@requires_engine
def test_plot_formats_and_mistakes(run_dir, tmp_path):
    done = l4slab("plot", str(run_dir), "--out", str(tmp_path / "png"), "--format", "png")
    assert done.returncode == 0, done.stderr
    assert sorted(p.suffix for p in (tmp_path / "png").iterdir()) == [".png"] * 6
    for args, fragment in (
        (("plot", str(tmp_path / "absent")), "is not a directory"),
        (("plot", str(tmp_path)), "has no summary.json"),
        (("plot", str(run_dir), "--format", "jpg"), "--format: 'jpg' is not a list of png, svg"),
    ):
        done = l4slab(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.startswith("l4slab: error: ") and fragment in done.stderr, done.stderr


STUDY = prague_vs_cubic("plot-study", 2, 1, "1s", rate="50Mbit", labels=None,
                        bottleneck={"bdp_rtt": None, "qdisc": "dualpi2 target 5ms"},
                        factors={"bottleneck.buffer": ["1bdp", "2bdp"]})  # fmt: skip


@requires_engine
def test_the_sojourn_figure_draws_dualpi2_queues_apart(run_dir):
    from l4slab.analysis.runplots import load_run, run_figures

    fig = run_figures(load_run(run_dir))["sojourn"]
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert labels == ["queue C", "queue L"]  # no line mixing the two queues


@requires_engine
def test_plot_any_study_run_and_overlay_runs(run_dir, tmp_path):
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY)
    out = tmp_path / "study"
    done = l4slab("study", "run", str(study_file), "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    a, b = sorted((out / "runs").glob("*.parquet"))
    # A study's run by a unique id prefix: figures in STUDY_DIR/plots/<id>, with run.html.
    done = l4slab("plot", str(out / "runs" / a.stem[:10]))
    assert done.returncode == 0, done.stderr
    page = (out / "plots" / a.stem / "run.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 6 and "plot-study point" in page
    sojourn = (out / "plots" / a.stem / "sojourn.svg").read_text(encoding="utf-8")
    assert "queue C" in sojourn and "queue L" in sojourn
    # Three runs overlaid (two of a study, one run directory), as flent -i a -i b -i c.
    done = l4slab("plot", str(a), str(b), str(run_dir), "--out", str(tmp_path / "overlay"))
    assert done.returncode == 0, done.stderr
    goodput = (tmp_path / "overlay" / "goodput.svg").read_text(encoding="utf-8")
    names = [f"plot-study p{p} t0" for p in (0, 1)]
    for name in names:
        assert f"{name}: prague" in goodput or f"{name}: cubic" in goodput, name
    assert f"{run_dir.name}: prague $x$" in goodput
    page = (tmp_path / "overlay" / "overlay.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 6 and "3 runs overlaid" in page
    # And exported: iperf3 JSON per TCP flow in STUDY_DIR/export/<id>, from the stored rows.
    done = l4slab("export", "--iperf3-json", str(out / "runs" / a.stem[:10]))
    assert done.returncode == 0, done.stderr
    files = sorted((out / "export" / a.stem).glob("iperf3-flow*.json"))
    assert [f.name for f in files] == ["iperf3-flow0.json", "iperf3-flow1.json"]
    import json

    import pandas as pd
    from l4slab.study import store

    stored = store.read_run_table(a, "flows").set_index("id")
    for k, path in enumerate(files):
        end = json.loads(path.read_text())["end"]
        assert end["sum_received"]["bits_per_second"] == pytest.approx(stored.loc[k, "goodput_mbps"] * 1e6)
    assert isinstance(stored, pd.DataFrame)
    for args, fragment in (
        (("plot", str(a), str(b)), "--out: required to overlay 2 runs"),
        (("plot", str(out / "runs" / "zz")), "names 0 runs of"),
    ):
        done = l4slab(*args)
        assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr, done.stderr
