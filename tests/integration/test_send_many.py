"""KafkaProducer.send_many against a real broker, read back with librdkafka."""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pytest

from cproducer import KafkaProducer, errors
from cproducer.localbroker import LocalBroker
from cproducer.utils.murmur2 import partition_for_key
from tests.integration.readback import assert_delivered, by_partition, read_back


def _topic(broker: LocalBroker, partitions: int) -> str:
    name = f"many-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions)
    return name


def _check_mapping(result, records, values) -> None:
    seen = {(r.partition, r.offset): r for r in records}
    for i, v in enumerate(values):
        r = seen[(int(result.partitions[i]), int(result.offsets[i]))]
        assert r.value == v


VALUES = [b"value-%05d" % i if i % 97 else None for i in range(3000)]
KEYS = [b"key-%03d" % (i % 101) if i % 13 else None for i in range(3000)]


def _forms(values):
    """The same values as every input form send_many takes."""
    non_null = [v if v is not None else b"" for v in values]
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in non_null])]).astype(np.int64)
    return {
        "list": list(values),
        "tuple": tuple(values),
        "numpy_object": np.array(values, dtype=object),
        "arrow_binary": pa.array(values, pa.binary()),
        "arrow_large_binary": pa.array(values, pa.large_binary()),
        "buffer_offsets": (b"".join(non_null), offsets),
    }


@pytest.mark.parametrize("form", list(_forms(VALUES)))
def test_every_input_form_keyed_round_trips(broker: LocalBroker, form: str) -> None:
    topic = _topic(broker, 5)
    values = _forms(VALUES)[form]
    expected = [v if v is not None or form != "buffer_offsets" else b"" for v in VALUES]
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=2) as producer:
        result = producer.send_many(topic, values, keys=pa.array(KEYS)).get(30)
    assert result.count == 3000 and not result.errors
    records = read_back(broker.bootstrap_servers, topic, 5, 3000)
    assert len(records) == 3000
    _check_mapping(result, records, expected)
    for r in records:
        if r.key is not None:
            assert r.partition == partition_for_key(r.key, 5)  # librdkafka's murmur2 choice
    # order within each partition follows the call order; records are named by the index whose
    # reported offset they are at (the null values are alike), their values checked above
    index = {(int(p), int(o)): i for i, (p, o) in enumerate(zip(result.partitions, result.offsets))}
    assert_delivered(
        records,
        range(3000),
        identity=lambda r: index.get((r.partition, r.offset)),
        partitions=result.partitions.tolist(),
    )


def test_fixed_width_numpy_strings_and_string_arrays(broker: LocalBroker) -> None:
    topic = _topic(broker, 2)
    s_arr = np.array([b"a", b"bb", b"ccc", b""], dtype="S4")
    strings = pa.array(["x", "yy", None, "zzzz"])
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        r1 = producer.send_many(topic, s_arr, partition=0).get(10)
        r2 = producer.send_many(topic, strings, partition=1).get(10)
    assert not r1.errors and not r2.errors
    recs = by_partition(read_back(broker.bootstrap_servers, topic, 2, 8))
    assert [r.value for r in recs[0]] == [b"a", b"bb", b"ccc", b""]
    assert [r.value for r in recs[1]] == [b"x", b"yy", None, b"zzzz"]


def test_unkeyed_records_are_sticky_and_spread(broker: LocalBroker) -> None:
    topic = _topic(broker, 4)
    values = pa.array([b"z" * 100] * 20000)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, batch_size=4096, linger_ms=0
    ) as producer:
        result = producer.send_many(topic, values).get(30)
    parts = result.partitions
    assert set(np.unique(parts).tolist()) == {0, 1, 2, 3}
    switches = int((parts[1:] != parts[:-1]).sum())
    assert switches < 20000 / 20
    counts = np.bincount(parts, minlength=4)
    assert all(0.10 < c / 20000 < 0.40 for c in counts), counts  # ~200 runs: a 5 sd bound


def test_headers_timestamps_and_partition_array(broker: LocalBroker) -> None:
    topic = _topic(broker, 3)
    n = 300
    values = [b"%d" % i for i in range(n)]
    headers = [[("i", b"%d" % i), ("ü", None)] if i % 2 else None for i in range(n)]
    timestamps = np.arange(n, dtype=np.int64) + 1_600_000_000_000
    parts = np.array([i % 3 if i % 5 else -1 for i in range(n)], dtype=np.int32)
    with KafkaProducer(bootstrap_servers=broker.bootstrap_servers) as producer:
        result = producer.send_many(
            topic, values, partition=parts, headers=headers, timestamps=timestamps
        ).get(10)
    assert not result.errors
    explicit = parts >= 0
    assert (result.partitions[explicit] == parts[explicit]).all()
    records = read_back(broker.bootstrap_servers, topic, 3, n)
    assert_delivered(records, values, partitions=result.partitions.tolist())
    by_value = {r.value: r for r in records}
    for i in range(n):
        r = by_value[b"%d" % i]
        assert r.timestamp == 1_600_000_000_000 + i
        assert r.headers == (headers[i] or [])


def test_bad_elements_are_reported_with_their_index_and_nothing_is_sent(
    broker: LocalBroker,
) -> None:
    topic = _topic(broker, 2)
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers, max_request_size=10_000
    ) as producer:
        # a value send() would refuse is refused with send()'s error type
        for bad in (3, "c"):
            with pytest.raises(errors.SerializationError):
                producer.send(topic, bad)
            with pytest.raises(errors.SerializationError, match=r"values\[2\] must be bytes"):
                producer.send_many(topic, [b"a", b"b", bad])
        with pytest.raises(errors.SerializationError, match="encode str to bytes first"):
            producer.send_many(topic, ["a"])
        with pytest.raises(errors.SerializationError, match=r"keys\[1\]"):
            producer.send_many(topic, [b"a", b"b"], keys=[b"k", "k"])
        with pytest.raises(errors.RecordTooLargeError, match="record 1 is"):
            producer.send_many(topic, [b"a", b"x" * 20_000])
        with pytest.raises(errors.InvalidPartitionError, match=r"partition\[1\] = 7"):
            producer.send_many(topic, [b"a", b"b"], partition=np.array([0, 7]))
        with pytest.raises(errors.SerializationError, match="record 0"):
            producer.send_many(topic, [b"a"], headers=[[(b"k", b"v")]])
        with pytest.raises(ValueError, match="keys has 1 elements, values has 2"):
            producer.send_many(topic, [b"a", b"b"], keys=[b"k"])
        with pytest.raises(TypeError, match="values must be a list"):
            producer.send_many(topic, {"a": 1})
        ok = producer.send_many(topic, [b"good"]).get(10)
    assert not ok.errors
    assert [r.value for r in read_back(broker.bootstrap_servers, topic, 2, 1)] == [b"good"]


def test_callback_and_exactly_once_completion_on_close(broker: LocalBroker) -> None:
    topic = _topic(broker, 2)
    results = []
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=60_000)
    fut = producer.send_many(topic, [b"x"] * 500)
    fut.add_callback(results.append)
    producer.close(timeout=0)
    result = fut.get(5)
    assert results == [result]
    assert result.count == 500 and len(result.errors) == 500
    assert all(isinstance(e, errors.KafkaError) for e in result.errors.values())


def test_sender_waits_instead_of_spinning_at_the_in_flight_limit(broker: LocalBroker) -> None:
    """With a connection's in-flight requests all out, the Sender polls with a timeout until an
    answer comes back; a 0 delay for a connected node made it spin (30k zero-timeout polls for
    ~110 requests, a third of a CPU taken from the producing thread)."""
    topic = _topic(broker, 4)
    values = pa.array([b"%08d" % i + b"x" * 92 for i in range(200_000)], pa.binary())
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=5,
        batch_size=256 * 1024,
        max_in_flight_requests_per_connection=2,
    ) as producer:
        producer.send_many(topic, values[:10]).get(30)
        client = producer._sender.client
        real_poll = client.poll
        zero_polls = [0]

        def counting_poll(timeout_ms: int, now_ms: int) -> None:
            if timeout_ms == 0:
                zero_polls[0] += 1
            real_poll(timeout_ms, now_ms)

        client.poll = counting_poll
        requests_before = producer._sender.metrics.requests_sent
        futures = [
            producer.send_many(topic, values[i : i + 10_000]) for i in range(0, 200_000, 10_000)
        ]
        producer.flush()
        del client.poll
        requests = producer._sender.metrics.requests_sent - requests_before
    assert sum(f.get(1).count for f in futures) == 200_000
    assert requests >= 10  # ~21 MB in 256 KiB batches, two requests in flight at most
    assert zero_polls[0] <= 3 * requests + 50, (zero_polls[0], requests)
