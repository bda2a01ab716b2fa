"""murmur2: Java's vectors, kafka-python parity, scalar == every vector form."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from cproducer.utils.murmur2 import (
    murmur2,
    partition_for_key,
    partitions_for_buffer,
    partitions_for_keys,
    to_positive,
)

JAVA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


def test_java_vectors() -> None:
    for text, expected in JAVA_VECTORS.items():
        assert murmur2(text.encode()) == expected
        assert murmur2(bytearray(text.encode())) == expected
    assert to_positive(-1) == 0x7FFFFFFF
    assert partition_for_key(b"21", 10) == to_positive(-973932308) % 10


def test_parity_with_kafka_python_100k() -> None:
    rnd = random.Random(3)
    keys = [rnd.randbytes(rnd.randint(0, 64)) for _ in range(100_000)]
    for k in keys:
        assert murmur2(k) & 0xFFFFFFFF == kafka_python_murmur2(k)


def test_scalar_equals_every_vector_form() -> None:
    rnd = random.Random(5)
    keys = [rnd.randbytes(rnd.randint(0, 40)) for _ in range(5000)]
    n = 13
    expected = np.array([partition_for_key(k, n) for k in keys], dtype=np.int32)
    assert (partitions_for_keys(keys, n) == expected).all()
    assert (partitions_for_keys(tuple(keys), n) == expected).all()
    assert (partitions_for_keys(np.array(keys, dtype=object), n) == expected).all()
    # numpy S: items lose trailing NULs, exactly as numpy hands them out
    s_arr = np.array(keys, dtype="S40")
    s_expected = [partition_for_key(bytes(x), n) for x in s_arr]
    assert partitions_for_keys(s_arr, n).tolist() == s_expected
    for typ in (pa.binary(), pa.large_binary()):
        arr = pa.array(keys, typ)
        assert (partitions_for_keys(arr, n) == expected).all()
        sliced = pa.array(keys + [None] * 3, typ).slice(2000, 3003)
        got = partitions_for_keys(sliced, n)
        assert (got[:3000] == expected[2000:]).all() and (got[3000:] == -1).all()
    strings = [f"user-{i}" for i in range(1000)]
    assert partitions_for_keys(pa.array(strings), n).tolist() == [
        partition_for_key(s.encode(), n) for s in strings
    ]
    data = b"".join(keys)
    offsets = np.concatenate([[0], np.cumsum([len(k) for k in keys])])
    for dt in (np.int32, np.int64):
        assert (partitions_for_buffer(data, offsets.astype(dt), n) == expected).all()


def test_nulls_and_bad_input() -> None:
    assert partitions_for_keys([b"a", None], 3).tolist() == [partition_for_key(b"a", 3), -1]
    with pytest.raises(TypeError, match=r"keys\[1\] must be bytes-like or None, got int"):
        partitions_for_keys([b"a", 5], 3)
    with pytest.raises(ValueError, match="num_partitions must be > 0"):
        partitions_for_keys([b"a"], 0)
    with pytest.raises(TypeError, match="object or S dtype"):
        partitions_for_keys(np.arange(3), 3)
    with pytest.raises(ValueError, match="outside the values buffer"):
        partitions_for_buffer(b"abc", np.array([0, 10], dtype=np.int32), 3)
    with pytest.raises(TypeError, match="key must be bytes-like"):
        murmur2(12)
