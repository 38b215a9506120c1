"""A run file's shortcuts give what the general paths give: the ``flow_series`` table built
from the engine's arrays equals the one converted from ``flow_series_frame``, and the
content digest read from the column buffers equals the digest of ``is_valid`` and
``fill_null`` (so the files, their digests and the catalog do not change)."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from l4slab.results import flow_series_frame
from l4slab.study import store

T = 5
TIME_S = np.arange(T) * 0.1

FLOW_SERIES = {
    "an integer series one flow lacks": (
        [{"goodput_mbps": np.ones(T), "ce_packets": np.arange(T)}, {"goodput_mbps": np.full(T, np.nan)}]
    ),
    "part of the CC state, a missing mode": (
        [
            {"goodput_mbps": np.ones(T)},
            {
                "goodput_mbps": np.ones(T),
                "bw_est_mbps": np.ones(T),
                "cc_mode": np.array(["A", None, "B", "C", "D"], dtype=object),
            },
        ]
    ),
    "a later flow's new series, integer and float": [{"a": np.arange(T)}, {"a": np.ones(T) * 0.5, "b": np.arange(T)}],
    "a flow without series": [{}, {"a": np.arange(T)}],
}


@pytest.mark.parametrize("case", FLOW_SERIES)
def test_the_flow_series_table_from_the_engine_arrays_equals_the_frames(case):
    per_flow = FLOW_SERIES[case]
    raw = {"time_s": TIME_S, "flows": [{"id": 2 * i + 1} for i in range(len(per_flow))], "flow_series": per_flow}
    direct = store._flow_series_arrow(raw)
    assert direct is not None
    general = store._arrow(flow_series_frame(raw), "flow_series")
    assert direct.schema.equals(general.schema)
    assert direct.equals(general)


def test_anything_else_takes_the_frames_path():
    assert store._flow_series_arrow({"time_s": TIME_S, "flows": [], "flow_series": []}) is None
    text = {"time_s": TIME_S, "flows": [{"id": 0}], "flow_series": [{"x": np.array(list("abcde"), dtype=object)}]}
    assert store._flow_series_arrow(text) is None


def _general_digest(table: pa.Table) -> str:
    """The digest of every numeric column through ``is_valid`` and ``fill_null``."""
    digest = hashlib.sha256()
    for name in table.column_names:
        array = table.column(name).combine_chunks()
        digest.update(np.packbits(array.is_valid().to_numpy(zero_copy_only=False)).tobytes())
        values = pc.fill_null(array, 0).to_numpy(zero_copy_only=False)
        digest.update(values.dtype.str.encode() + b"\0" + values.tobytes())
    return digest.hexdigest()


def test_the_digest_of_numeric_columns_read_from_their_buffers_equals_the_general_one():
    ints = pa.chunked_array([pa.array([1, None, 3], pa.int64()), pa.nulls(4, pa.int64()), pa.array([7, 8])])
    floats = pa.chunked_array([pa.array([np.nan, -0.0, None, 2.5]), pa.array([None, 1.0, None, None, 3.0], pa.float64())])
    small = pa.array([1, 2, None, 4, 5, 6, 7, 8, 9, 10, None], pa.int32()).slice(1, 9)  # an offset into its buffers
    table = pa.table({"i": ints, "f": floats, "s": pa.chunked_array([small])})
    fast = hashlib.sha256()
    for name in table.column_names:
        store._column_digest(fast, table.column(name))
    assert fast.hexdigest() == _general_digest(table)


def test_the_arrow_table_from_the_column_arrays_equals_the_one_from_each_series():
    import pandas as pd

    frame = pd.DataFrame(
        {
            "text": ["a", None],
            "count": [1, 2],
            "share": [0.5, np.nan],
            "flag": [True, False],
            "maybe": pd.Series([1, None], dtype="Int64"),
            "none": [None, None],
        }
    )
    general = [pa.array(column, from_pandas=True) for _, column in frame.items()]
    general.append(pa.array(["t", "t"], pa.string()))
    expected = pa.Table.from_arrays(general, names=[*(f"t.{name}" for name in frame.columns), "table"])
    table = store._arrow(frame, "t")
    assert table.schema.equals(expected.schema)
    assert table.equals(expected)


def test_the_catalog_parts_assembled_kind_by_kind_equal_one_concatenation():
    # Parts of several kinds interleaved, as a study's bottleneck parts are (each qdisc its
    # own counters): columns missing in some kinds (an integer becomes float with NaN, a
    # bool and a string object), nulls in some parts of a kind and not others, identity
    # values of several types (a factor that is a number in some runs and text in others,
    # None, a seed beyond int64), parts without rows and without columns.
    import pandas as pd
    import pyarrow as pa

    def part(i, rows, **factors):
        identity = {"run_id": f"r{i}", "point": i, **factors, "trial": i % 3, "seed": i}
        return store.Part(identity, None if rows is None else pa.table(rows))

    fifo = lambda i: part(i, {"qdisc_backlog": [i * 10]}, buffer="2bdp")  # noqa: E731
    pie = lambda i: part(  # noqa: E731
        i, {"qdisc_prob": [0.5 * i], "qdisc_ecn": [i % 2 == 0], "mode": ["x" if i % 4 else None]}, buffer=i
    )
    dual = lambda i: part(  # noqa: E731
        i, {"qdisc_backlog": pa.array([None, i], pa.int64()), "flag": [True, None if i % 2 else False]}, buffer=1.5
    )
    odd = [
        part(97, {"qdisc_backlog": pa.array([], pa.int64())}, buffer="0.5bdp"),
        part(98, None, buffer=None),
        store.Part({"run_id": "r99", "point": 99, "buffer": "x", "trial": 0, "seed": 2**64 - 1},
                   pa.table({"qdisc_backlog": [3]})),
    ]  # fmt: skip
    parts = [make(i) for i in range(30) for make in (fifo, pie, dual)][::-1] + odd + [fifo(100)]
    expected = pd.concat([p.frame() for p in parts], ignore_index=True)
    got = store._assemble(parts)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert list(got.columns) == list(expected.columns)
    assert list(got.dtypes) == list(expected.dtypes)
    one_kind = [fifo(1), fifo(2)]
    pd.testing.assert_frame_equal(store._assemble(one_kind), pd.concat([p.frame() for p in one_kind], ignore_index=True))
