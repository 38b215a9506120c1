"""`l4slab study report DIR --published FILE.csv`: the published-table format, the comparison
numbers on a small synthetic table with known answers, and the report end to end."""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest
from l4slab.analysis import published as pub
from l4slab.errors import ScenarioError
from study_texts import prague_vs_cubic

HEADER = "panel,queue,buffer_bdp,rtt_ms,l4s_mbps,other_mbps,l4s_qdelay_ms,other_qdelay_ms\n"


def _write(tmp_path, body: str, header: str = HEADER):
    path = tmp_path / "pub.csv"
    path.write_text("# a comment\n" + header + body, encoding="utf-8")
    return path


def test_shipped_pam_panels_in_the_documented_format():
    table = pub.read_published("pam2025")
    assert list(table.columns) == list(pub.PUBLISHED_COLUMNS)
    assert len(table) == 90
    assert set(table["panel"]) == {"prague-cubic", "prague-cubic-ecn"}
    assert set(table["rtt_ms"]) == {10.0}
    row = table[(table.panel == "prague-cubic-ecn") & (table.queue == "fifo_ecn") & (table.buffer_bdp == 2)].iloc[0]
    assert (row.l4s_mbps, row.other_mbps, row.l4s_qdelay_ms, row.other_qdelay_ms) == (90.3, 4.6, 4.7, 9.4)
    # The older two-table view is the same numbers.
    legacy = pub.published_cell("fifo_ecn", 2, "cubic_ecn")
    assert (legacy.l4s_mbps, legacy.classic_mbps) == (90.3, 4.6)


def test_comparison_on_a_synthetic_table_with_known_answers(tmp_path):
    published = pub.read_published(
        _write(
            tmp_path,
            "a,fifo,1,10,50,45,1.0,2.0\n"  # neutral
            "a,fifo,2bdp,10,10,85,,\n"  # harmed (10 %), delays not published
            "a,dualpi2,1,10,85,10,0.3,5\n"  # harmful
            "b,fifo,1,2,40,55,1,1\n"  # another panel, 2 ms
            "b,fifo,2,2,40,55,1,1\n",  # not simulated
        )
    )
    simulated = pd.DataFrame(
        {
            "panel": ["a", "a", "a", "b", "zzz"],
            "queue": ["fifo", "fifo", "dualpi2", "fifo", "fifo"],
            "buffer_bdp": ["1bdp", 2.0, 1.0, 1.0, 1.0],
            "rtt_ms": [10.0, 10.0, 10.0, 2.0, 10.0],
            "l4s_mbps": [52.0, 25.0, 84.0, 40.0, 1.0],  # errors 2, 15, 1, 0
            "other_mbps": [44.0, 70.0, 12.0, 59.0, 1.0],  # errors 1, 15, 2, 4
            "l4s_qdelay_ms": [1.5, 3.0, 0.4, 1.0, 0.0],
            "other_qdelay_ms": [2.0, 3.0, 5.0, 1.0, 0.0],
        }
    )
    result = pub.compare_published(simulated, published)
    table = result.table
    assert len(table) == 4  # "b" at 2 BDP and the unknown panel "zzz" are not compared
    cell = table[(table.panel == "a") & (table.queue == "fifo") & (table.buffer_bdp == 1)].iloc[0]
    assert (cell.l4s_mbps_diff, cell.other_mbps_diff, cell.tput_abs_err_mbps) == (2.0, -1.0, 1.5)
    assert cell.l4s_qdelay_ms_diff == pytest.approx(0.5)
    assert list(table["harm_pub"]) == ["neutral", "harmed", "harmful", "neutral"]
    assert list(table["harm_sim"]) == ["neutral", "neutral", "harmful", "neutral"]
    a = result.panels.set_index("panel").loc["a"]
    assert a.cells == 3
    assert a.harm_agreement == pytest.approx(2 / 3)  # harmed (10 %) vs neutral (25 %)
    assert a.within_3mbps == pytest.approx(2 / 3)  # the 15/15 cell is out
    assert a.tput_mae_mbps == pytest.approx((1.5 + 15 + 1.5) / 3)
    assert a.l4s_mae_mbps == pytest.approx((2 + 15 + 1) / 3)
    b = result.panels.set_index("panel").loc["b"]
    assert (b.cells, b.harm_agreement, b.within_3mbps, b.tput_mae_mbps) == (1, 1.0, 0.0, 2.0)  # other off by 4
    overall = result.overall
    assert overall["cells"] == 4
    assert overall["harm_agreement"] == pytest.approx(3 / 4)
    assert overall["within_3mbps"] == pytest.approx(2 / 4)
    assert overall["tput_mae_mbps"] == pytest.approx((1.5 + 15 + 1.5 + 2) / 4)


def test_identical_tables_agree_perfectly():
    table = pub.read_published("pam2025")
    result = pub.compare_published(table, table)
    assert result.overall["cells"] == 90
    assert (result.overall["harm_agreement"], result.overall["within_3mbps"], result.overall["tput_mae_mbps"]) == (
        1.0, 1.0, 0.0,
    )  # fmt: skip
    assert list(result.panels["panel"]) == ["prague-cubic", "prague-cubic-ecn"]


@pytest.mark.parametrize(
    ("body", "header", "message"),
    [
        ("a,fifo,1,10,50,x,1,1\n", HEADER, r"line 3, column 'other_mbps': 'x' is not a number ≥ 0"),
        ("a,fifo,1,10,-1,40,1,1\n", HEADER, r"line 3, column 'l4s_mbps': '-1' is not a number ≥ 0"),
        ("a,fifo,1,0,50,40,1,1\n", HEADER, r"line 3, column 'rtt_ms': '0' is not a number > 0"),
        ("a,fifo,big,10,50,40,1,1\n", HEADER, r"line 3, column 'buffer_bdp': 'big' is not a buffer > 0 in BDPs"),
        ("a,,1,10,50,40,1,1\n", HEADER, r"line 3, column 'queue': empty"),
        ("a,fifo,1,10,50\n", HEADER, r"line 3: 5 fields where the header has 8"),
        ("a,fifo,1,10,50,40,1,1\na,fifo,1bdp,10,51,40,1,1\n", HEADER, r"line 4: the cell .* is already on line 3"),
        ("a,fifo,1,10,50,40\n", HEADER.replace(",l4s_qdelay_ms,other_qdelay_ms", ""), None),
        ("a,fifo,1,10,50\n", "panel,queue,buffer_bdp,rtt_ms,l4s_mbps\n", r"line 2: missing column 'other_mbps'"),
        ("a,fifo,1,10,50,40,1\n", "panel,queue,buffer,rtt_ms,l4s_mbps,other_mbps,x\n", r"unknown column 'buffer'"),
        ("", HEADER, r"no rows after the header"),
    ],
)
def test_bad_published_csv_is_one_line_naming_row_and_column(tmp_path, body, header, message):
    path = _write(tmp_path, body, header)
    if message is None:  # delays are optional columns
        table = pub.read_published(path)
        assert math.isnan(table.loc[0, "l4s_qdelay_ms"])
        return
    with pytest.raises(ScenarioError, match=message) as err:
        pub.read_published(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_missing_published_file_is_one_line(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        pub.read_published(tmp_path / "nope.csv")


STUDY = prague_vs_cubic(
    "mini", 7, 1, "3s", labels=("l4s", "classic"), flows=({"tso": False}, {"ecn": 0, "tso": False}),
    factors={"bottleneck.qdisc": {"preset": "pam2025.testbed", "only": ["fifo_ecn", "dualpi2"]},
             "bottleneck.buffer": ["2bdp"]},
    tail='[panels.prague-cubic]\n[panels.prague-cubic-ecn]\nset = { "flows.1.ecn" = 1, "flows.1.receiver_ecn" = 1 }\n',
)  # fmt: skip


def test_report_with_published_end_to_end(tmp_path):
    study_file = tmp_path / "mini.toml"
    study_file.write_text(STUDY, encoding="utf-8")
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "l4slab"]
    done = subprocess.run([*cli, "study", "run", str(study_file), "--out", str(out), "--panel", "prague-cubic-ecn",
                           "--jobs", "1"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 runs" in done.stdout  # one panel: 2 queues × 1 buffer × 1 trial
    done = subprocess.run([*cli, "study", "report", str(out), "--published", "pam2025"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Comparison with the published table" in text
    assert "| prague-cubic-ecn | 2 |" in text  # the panel row: 2 cells compared
    assert "90.3" in text and "42.7" in text  # fifo_ecn and dualpi2 at 2 BDP, published
    assert (out / "report" / "published_prague-cubic-ecn.png").is_file()
    table = pd.read_csv(out / "report" / "published_comparison.csv")
    assert set(table["queue"]) == {"fifo_ecn", "dualpi2"} and set(table["rtt_ms"]) == {10.0}
    # A bad table stops the report with one line and exit 2.
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "p,fifo,1,10,fast,1,1,1\n", encoding="utf-8")
    done = subprocess.run([*cli, "study", "report", str(out), "--published", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "column 'l4s_mbps': 'fast'" in done.stderr


def _plan_as_finished_study(spec):
    """A finished study's ``runs`` and ``flows`` tables as the catalog gives them, one run per
    point, built from the plan (every flow at 1 Mbit/s, 1 ms of queuing delay): what
    :func:`~l4slab.analysis.published.simulated_cells` reads, without running the engine."""
    from types import SimpleNamespace

    from l4slab.study.spec import column_name

    runs, flows = [], []
    for point in spec.points:
        run_id = f"run{point.index}"
        runs.append({"run_id": run_id, "status": "done", **{column_name(p): v for p, v in point.values.items()}})
        for i, flow in enumerate(point.config["flows"]):
            rtt_ms = flow["rtt_ns"] / 1e6
            flows.append({"run_id": run_id, "id": i, "cc": flow["cc"], "goodput_mbps": 1.0,
                          "base_rtt_ms": rtt_ms, "mean_srtt_ms": rtt_ms + 1.0})  # fmt: skip
    return SimpleNamespace(runs=pd.DataFrame(runs), flows=pd.DataFrame(flows))


@pytest.mark.parametrize("name", ["pam2025-prague-cubic", "pam2025", "kernel-differential"])
def test_published_pam2025_matches_every_cell_of_each_builtin_study_with_its_panels(name):
    """`--published pam2025` beside a built-in study with the queue and buffer factors: every
    point of a panel the table has is one compared cell (pam2025-prague-cubic: all 90, which
    its own report section compares too), and no point of another panel is."""
    from l4slab.study.spec import load_study

    spec = load_study(name)
    table = pub.read_published("pam2025")
    cells = pub.simulated_cells(_plan_as_finished_study(spec), spec.name)
    result = pub.compare_published(cells, table)
    queue_of = {(p.values["panel"], p.values["bottleneck.qdisc"], pub.normalise_buffer(p.values["bottleneck.buffer"]))
                for p in spec.points if p.values.get("panel") in set(table["panel"])}  # fmt: skip
    assert len(result.table) == len(queue_of)
    assert set(zip(result.table["panel"], result.table["queue"], result.table["buffer_bdp"], strict=True)) == queue_of
    if name == "pam2025-prague-cubic":
        assert len(result.table) == len(spec.points) == 90


def test_published_section_of_a_study_without_the_queue_factors_says_why(tmp_path):
    from l4slab.study.spec import load_study

    spec = load_study("dualq-multiflow")
    with pytest.raises(ScenarioError, match=r"--published: the study has no 'bottleneck.buffer' factor"):
        pub.simulated_cells(_plan_as_finished_study(spec), spec.name)
