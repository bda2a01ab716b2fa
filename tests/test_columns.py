"""send_many's columns: Arrow arrays read in place, and the records' order by partition."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from cproducer.producer.columns import to_column
from cproducer.producer.send_many import buffer_column, offsets_column, partition_order


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.string(), pa.large_string()])
def test_a_sliced_arrow_array_gives_its_own_lengths_and_nulls(kind) -> None:
    items = [b"a", None, b"ccc", b"", b"eeeee", None, b"gg"]
    if kind in (pa.string(), pa.large_string()):
        items = [None if v is None else v.decode() for v in items]
    arr = pa.array(items, kind)
    for start, stop in [(0, 7), (1, 6), (2, 4), (5, 7), (3, 3)]:
        col = to_column(arr[start:stop], "values")
        want = [-1 if v is None else len(v) for v in items[start:stop]]
        assert (col.n, col.lengths.tolist()) == (stop - start, want)
    chunked = pa.chunked_array([arr[:3], arr[3:]])
    assert to_column(chunked, "values").lengths.tolist() == [
        -1 if v is None else len(v) for v in items
    ]


def test_offsets_outside_the_data_are_refused() -> None:
    data = b"abcdef"
    good = np.array([0, 2, 6], dtype=np.int32).tobytes()
    assert offsets_column(data, good, 0, 2, False).lengths.tolist() == [2, 4]
    for offsets in ([0, 2, 7], [0, 3, 2], [-1, 2, 6]):
        with pytest.raises(ValueError, match="outside the data buffer"):
            offsets_column(data, np.array(offsets, dtype=np.int32).tobytes(), 0, 2, False)
    with pytest.raises(ValueError, match="outside the data buffer"):  # an empty buffer too
        buffer_column(b"", np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="needs 4"):
        offsets_column(data, np.array([0, 2, 6], dtype=np.int64).tobytes(), 1, 2, True)


def test_partition_order_is_a_stable_sort_or_none() -> None:
    rng = np.random.default_rng(3)
    parts = rng.integers(0, 7, 5000).astype(np.int32)
    order = partition_order(parts)
    assert order is not None and order.dtype == np.int64
    assert order.tolist() == np.argsort(parts, kind="stable").tolist()
    assert partition_order(np.full(10, 3, dtype=np.int32)) is None  # one partition: call order
    mixed = parts.copy()
    mixed[17] = -1  # a sticky record: where it lands depends on the records before it
    assert partition_order(mixed) is None
    assert partition_order(np.empty(0, dtype=np.int32)) is None
