"""``docs/reference.md`` is generated from the engine's schema: every scenario
key, qdisc parameter and ``cc_params`` key with its default and range, and the committed file is
exactly what ``python -m l4slab.reference`` prints for the engine built here."""

from pathlib import Path

import pytest
from conftest import requires_engine

REPO = Path(__file__).resolve().parents[2]


@requires_engine
def test_committed_reference_matches_the_engine_schema():
    from l4slab.reference import render

    committed = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    assert committed == render(), "docs/reference.md is stale: python -m l4slab.reference > docs/reference.md"


@requires_engine
def test_reference_lists_every_qdisc_parameter_and_cc_param():
    from l4slab import schema

    text = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    engine = schema.engine_schema()
    for kind, spec in engine.qdiscs.items():
        section = text.split(f"### `{kind}`\n", 1)[1].split("\n### ", 1)[0]
        assert section.count("\n| ") - 1 >= len(spec.params), kind  # one row per parameter (flags: one row)
    for name, cc in engine.congestion_controls.items():
        section = text.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        for key in cc.params:
            assert f"| `{key}` |" in section, (name, key)
    for key in ("duration", "warmup", "trace_sojourn", "qdisc", "buffer", "cc_params", "receiver_ecn", "packet_size"):
        assert f"| `{key}` |" in text
    if "dualpi2" in engine.qdiscs:
        assert "| `target` | time | 15ms |" in text.split("### `dualpi2`", 1)[1]


def test_reference_is_linked_from_the_readme():
    assert "docs/reference.md" in (REPO / "README.md").read_text(encoding="utf-8")
    pytest.importorskip("l4slab")
