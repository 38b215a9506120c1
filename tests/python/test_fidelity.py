"""The fidelity suite's machinery (the suite itself is run by `l4slab fidelity`, not here)."""

from __future__ import annotations

import math

from l4slab import fidelity
from l4slab.cli import main


def test_checks_judge_absolute_and_relative_tolerances():
    assert fidelity.Check("x", 0.52, tol=0.15).passes(0.66) is True
    assert fidelity.Check("x", 0.52, tol=0.15).passes(0.68) is False
    assert fidelity.Check("x", 66.3, rel=0.15).passes(75.0) is True
    assert fidelity.Check("x", 66.3, rel=0.15).passes(118.0) is False
    assert fidelity.Check("x", 1.0).passes(5.0) is None, "a reference is shown, not judged"
    assert fidelity.Check("x", 1.0, tol=1.0).passes(math.nan) is False


def test_every_row_resolves_to_a_valid_scenario():
    from l4slab.scenario import scenario_from_toml

    for row in fidelity.ROWS:
        scenario_from_toml(row.scenario(True)).resolve()
    assert {r.number for r in fidelity.ROWS} >= {1, 2, 3, 4, 5, 6, 7, 8, 15}


def test_row_15_mark_probabilities_count_packets():
    table = fidelity.run_rows({15}, quick=True)
    assert list(table["quantity"]) == ["max mark_prob", "max flow marks/packet"]
    assert table["agrees"].all(), table
    assert (table["simulated"] <= 1.0).all()


def test_cli_refuses_an_unknown_row_on_one_line(capsys):
    assert main(["fidelity", "--rows", "99"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rows: no row 99" in err[0]


def test_row_3_reads_the_l_queue_tail_after_the_warm_up():
    import types

    import pandas as pd

    # 100 000 L packets at 0.5 ms and 20 (2e-4) at 9 ms after the warm-up; C packets and
    # warm-up packets at 50 ms must not count.
    n = 100_000
    trace = pd.DataFrame(
        {
            "time_s": [10.0] * (n + 20) + [10.0, 1.0],
            "class": ["L"] * (n + 20) + ["C", "L"],
            "sojourn_ms": [0.5] * n + [9.0] * 20 + [50.0, 50.0],
        }
    )
    result = types.SimpleNamespace(sojourn=trace, summary={"warmup_s": 5.0})
    tail = fidelity._l_tail(result)
    assert tail["L sojourn P99.99"] == 9.0
    assert tail["L sojourn P99.9"] == 0.5
    assert tail["L sojourn max"] == 9.0
    assert math.isclose(tail["L packets beyond 2 ms"], 100 * 20 / (n + 20))
    # The testbed's dualq rows run with the hosts' offloads on.
    toml = next(r for r in fidelity.ROWS if r.number == 3).scenario(True)
    assert "gro = true" in toml and "tso = true" in toml and "fq_pacing = true" in toml
