"""``l4slab study report``'s drawing cost: what a report of a small study draws and reads, counted,
so that a change that draws a figure twice, solves its layout twice or re-reads run files fails
here (the whole PAM 2025 study's report must take minutes, not hours)."""

import subprocess
import time

import pytest
from conftest import l4slab_command
from study_texts import prague_vs_cubic

pytest.importorskip("l4slab._core")

from l4slab.study import report as report_module  # noqa: E402
from l4slab.study import store  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402

SMALL = prague_vs_cubic("report-speed", 5, 1, "1s", rate="50Mbit",
                        factors={"bottleneck.qdisc": ["pfifo", "dualpi2"], "bottleneck.buffer": ["1bdp", "4bdp"]})


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-speed")
    study_file = root / "small.toml"
    study_file.write_text(SMALL)
    out = root / "out"
    subprocess.run(l4slab_command("study", "run", str(study_file), "--out", str(out), "--no-progress"), check=True)
    return out


def test_report_draws_each_figure_once_per_format_and_reads_each_series_once(small_study, monkeypatch):
    saves, layouts, reads = [], [], []
    savefig, execute, read = Figure.savefig, ConstrainedLayoutEngine.execute, store.read_run_table

    def counting_savefig(self, *args, **kwargs):
        saves.append(kwargs.get("format"))
        return savefig(self, *args, **kwargs)

    def counting_execute(self, fig):
        layouts.append(id(fig))
        return execute(self, fig)

    def counting_read(path, table):
        reads.append((path.name, table))
        return read(path, table)

    monkeypatch.setattr(Figure, "savefig", counting_savefig)
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", counting_execute)
    monkeypatch.setattr(store, "read_run_table", counting_read)
    started = time.monotonic()
    report_module.report(small_study)
    wall = time.monotonic() - started

    figures = sorted((small_study / "report").glob("*.png"))
    # goodput, delay and sojourn CCDF per queue against buffer, 4 points x (goodput, sRTT, cwnd,
    # sojourn) series + the goodput bars; Prague and CUBIC report no CC model state, so no
    # bandwidth-estimate or mode panels.
    assert len(figures) == 3 + 4 * 4 + 1
    assert saves.count("png") == len(figures) and saves.count("svg") == len(figures)
    # Constrained layout is solved on the first format's draw only (figures.save freezes it),
    # and once more for the bars, whose tick labels are measured (figures.fit_tick_labels).
    assert len(layouts) == len(figures) + 1, f"{len(layouts)} layout solves for {len(figures)} figures"
    # Each run's two series tables are read once (4 runs, trials = 1).
    assert sorted(reads) == sorted(set(reads)) and len(reads) == 4 * 2
    # A generous bound (about 5 s on an idle core): 17 figures at 0.3 s each, on a loaded machine.
    assert wall < 120.0, f"report of a 4-run study took {wall:.0f} s"


def test_goodput_bars_are_capped_and_the_report_says_so(small_study, monkeypatch):
    monkeypatch.setattr(report_module, "MAX_BAR_POINTS", 3)
    text = report_module.report(small_study).read_text()
    assert "Bars of the first 3 of 4 points; the others are in the tables above." in text
    # Every point is still in the tables.
    for point in range(4):
        assert f"[{point}](#point-{point})" in text


def test_one_trial_time_series_draws_the_trial_once():
    import pandas as pd
    from l4slab.analysis import figures

    frame = pd.DataFrame(
        {"time_s": [0.0, 0.1, 0.2] * 2, "flow": [0] * 3 + [1] * 3, "cwnd": [1.0, 2, 3, 4, 5, 6], "trial": "t0"}
    )
    one = figures.time_series(frame, value="cwnd", trial="trial", min_trials_for_band=5, lower=0.0)
    assert len(one.axes[0].lines) == 1 + 2  # the zero line, one line per flow: the trial is its own mean
    two = figures.time_series(
        pd.concat([frame, frame.assign(trial="t1", cwnd=frame["cwnd"] + 1)]),
        value="cwnd",
        trial="trial",
        min_trials_for_band=5,
        lower=0.0,
    )
    assert len(two.axes[0].lines) == 1 + 2 * 3  # the zero line, the mean and each of the two trials
