"""BatchBuilder (create_batch): the same answers as aiokafka's for the same appends: each
record's metadata (offset, size, timestamp), the batch's size, when it is full, its errors.
Every test runs on both builders."""

from __future__ import annotations

import json
import random
from typing import Any, Callable, List

import pytest
from aiokafka.producer.message_accumulator import BatchBuilder as PeerBatchBuilder

from cproducer.aio.batch_builder import BatchBuilder, varint_size


def _ours(batch_size: int, **kw: Any) -> Any:
    return BatchBuilder(batch_size, **kw)


def _peer(batch_size: int, **kw: Any) -> Any:
    return PeerBatchBuilder(batch_size, 0, **kw)


BUILDERS = pytest.mark.parametrize("make", [_ours, _peer], ids=["cproducer.aio", "aiokafka"])


def _fill(make: Callable[..., Any], records: List[dict], batch_size: int) -> List[Any]:
    batch = make(batch_size)
    out = []
    for r in records:
        md = batch.append(**r)
        out.append(None if md is None else (md.offset, md.size, md.timestamp))
    out.append((batch.size(), batch.record_count(), batch.closed()))
    return out


def _records(seed: int, n: int) -> List[dict]:
    rnd = random.Random(seed)
    base = 1_700_000_000_000
    out = []
    for _ in range(n):
        key = None if rnd.random() < 0.3 else rnd.randbytes(rnd.choice([0, 1, 10, 200]))
        value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 5, 100, 3000]))
        headers = [
            (rnd.choice(["h", "trace-id", "ü"]), None if rnd.random() < 0.2 else rnd.randbytes(9))
            for _ in range(rnd.choice([0, 0, 1, 3]))
        ]
        ts = base + rnd.choice([0, 1, 63, 64, 10_000, -5, 2**40])
        out.append({"timestamp": ts, "key": key, "value": value, "headers": headers})
    return out


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("batch_size", [100, 4096, 16384])
def test_same_metadata_sizes_and_full_point_as_aiokafka(seed: int, batch_size: int) -> None:
    records = _records(seed, 40)
    assert _fill(_ours, records, batch_size) == _fill(_peer, records, batch_size)


@BUILDERS
def test_the_first_record_always_fits_then_full_closes(make: Callable[..., Any]) -> None:
    batch = make(100)
    first = batch.append(timestamp=1, key=None, value=b"x" * 500)
    assert first is not None and first.offset == 0
    assert batch.size() > 100
    assert batch.append(timestamp=1, key=None, value=b"y") is None
    assert batch.closed()
    assert batch.append(timestamp=1, key=None, value=b"") is None  # closed stays closed
    assert batch.record_count() == 1


@BUILDERS
def test_close_and_crc(make: Callable[..., Any]) -> None:
    batch = make(16384)
    md = batch.append(timestamp=None, key=b"k", value=b"v")
    assert md.crc is None  # RecordBatch v2: one CRC per batch
    assert md.timestamp > 1_600_000_000_000  # None: now, in ms
    batch.close()
    assert batch.closed()
    assert batch.append(timestamp=None, key=b"k", value=b"v") is None
    assert batch.size() == 61 + md.size


@BUILDERS
def test_serializers_and_types(make: Callable[..., Any]) -> None:
    batch = make(
        16384, key_serializer=str.encode, value_serializer=lambda v: json.dumps(v).encode()
    )
    md = batch.append(timestamp=5, key="user", value={"a": 1})
    assert md.size == 1 + len(b"user") + len(b'{"a": 1}') + 1 + 1 + 1 + 1 + 1 + 1
    plain = make(16384)
    with pytest.raises(TypeError):
        plain.append(timestamp=5, key="str key", value=b"v")
    with pytest.raises(TypeError):
        plain.append(timestamp=5, key=None, value=12)
    with pytest.raises(TypeError):
        plain.append(timestamp="5", key=None, value=b"v")
    assert plain.append(timestamp=5.7, key=None, value=b"v").timestamp == 5
    with pytest.raises(TypeError):
        plain.append(5, None, b"v")  # keyword arguments only
    assert plain.record_count() == 1


@pytest.mark.parametrize(
    "value, size", [(0, 1), (-1, 1), (63, 1), (64, 2), (-65, 2), (8191, 2), (8192, 3), (2**40, 6)]
)
def test_varint_size(value: int, size: int) -> None:
    assert varint_size(value) == size
