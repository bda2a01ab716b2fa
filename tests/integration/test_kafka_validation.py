"""What only Apache Kafka shows: it checks every batch the producer writes (its size and CRC as
the log appends it, then LogValidator: compression, offsets, timestamps, keys), so a batch it
accepts is well formed and a batch it refuses is refused for the reason Java's producer would
meet. Each topic written is read back
by librdkafka and by Java's KafkaConsumer, and both must see exactly what was sent: keys, values,
headers, timestamps and their type, each partition in the order sent.

Where a refusal is the subject, the records concerned must fail as they fail in Java's producer
(``Sender.completeBatch`` / ``failBatch``, ``RecordAccumulator.splitAndReenqueue``), and the other
records, of other partitions or other batches, must be delivered. Where the broker's answer is the
point (which code a too-large record or a keyless record in a compacted topic gets), librdkafka
producing the same records to the same broker shows the answer.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import pytest
from confluent_kafka import KafkaError as CKError
from confluent_kafka import Producer as CKProducer

from cproducer import KafkaProducer, errors
from cproducer.compat.confluent import Producer as FacadeProducer
from tests.integration.readback import ConsumedRecord, read_back, read_back_java
from tests.tools.apache_kafka import ApacheKafka

pytestmark = pytest.mark.kafka

CREATE_TIME, LOG_APPEND_TIME = 1, 2
Headers = List[Tuple[str, Optional[bytes]]]
# one record as a reader must see it: offset, key, value, headers, timestamp, timestamp type
Row = Tuple[int, Optional[bytes], Optional[bytes], Headers, int, int]


class Sent(NamedTuple):
    key: Optional[bytes]
    value: Optional[bytes]
    headers: Optional[Headers]
    timestamp: Optional[int]  # given by the caller; None: the producer's clock
    future: Any


def _topic(kafka: ApacheKafka, partitions: int, **configs: str) -> str:
    """A new topic (``max_message_bytes="65536"``: max.message.bytes) whose partitions take
    writes (``create_topic`` waits until each leader does, KAFKA-15591)."""
    name = f"validation-{uuid.uuid4().hex[:10]}"
    kafka.create_topic(
        name, partitions, configs={k.replace("_", "."): v for k, v in configs.items()}
    )
    return name


def _producer(kafka: ApacheKafka, **config: Any) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, **config)


def _send(
    producer: KafkaProducer,
    topic: str,
    value: Optional[bytes],
    key: Optional[bytes] = None,
    headers: Optional[Headers] = None,
    partition: Optional[int] = None,
    timestamp: Optional[int] = None,
) -> Sent:
    future = producer.send(topic, value, key, headers, partition, timestamp)
    return Sent(key, value, headers, timestamp, future)


def _expected(sent: Sequence[Sent], timestamp_type: int = CREATE_TIME) -> Dict[int, List[Row]]:
    """What a reader must see of the records that were delivered, per partition in the order
    they were sent; the timestamp is the one the producer reported (RecordMetadata)."""
    out: Dict[int, List[Row]] = {}
    for s in sent:
        md = s.future.get(0)
        if s.timestamp is not None and timestamp_type == CREATE_TIME:
            assert md.timestamp == s.timestamp  # the caller's CreateTime, as given
        row = (md.offset, s.key, s.value, list(s.headers or []), md.timestamp, timestamp_type)
        out.setdefault(md.partition, []).append(row)
    return out


def _rows(records: List[ConsumedRecord]) -> Dict[int, List[Row]]:
    out: Dict[int, List[Row]] = {}
    for r in records:  # in the order the reader delivered them
        headers = [(k, v) for k, v in r.headers]
        row = (r.offset, r.key, r.value, headers, r.timestamp, r.timestamp_type)
        out.setdefault(r.partition, []).append(row)
    return out


def _assert_read_back_exactly(
    kafka: ApacheKafka, topic: str, partitions: int, expected: Dict[int, List[Row]]
) -> None:
    """librdkafka and Java's KafkaConsumer each read the topic: exactly ``expected``, nothing
    more (a refused batch left nothing behind), each partition in order."""
    n = sum(len(rows) for rows in expected.values())
    for reader in (read_back, read_back_java):
        got = _rows(reader(kafka.bootstrap_servers, topic, partitions, n))
        assert sorted(got) == sorted(expected), reader.__name__
        for p, rows in expected.items():
            assert len(got[p]) == len(rows), f"{reader.__name__}: partition {p}"
            for i, (g, e) in enumerate(zip(got[p], rows)):
                assert g == e, f"{reader.__name__}: partition {p}, record {i} of {len(rows)}"


def _failure(sent: Sent) -> BaseException:
    with pytest.raises(errors.KafkaError) as raised:
        sent.future.get(10)
    return raised.value


def _batch_v2_size(
    key: Optional[bytes], value: bytes, headers: Sequence[Tuple[str, Optional[bytes]]] = ()
) -> int:
    """The bytes of an uncompressed RecordBatch v2 holding this one record (offset and timestamp
    deltas 0): what the broker compares with the topic's max.message.bytes."""

    def varint(n: int) -> int:
        z, size = (n << 1) ^ (n >> 63), 1
        while z >= 0x80:
            z >>= 7
            size += 1
        return size

    def field(b: Optional[bytes]) -> int:
        return varint(-1) if b is None else varint(len(b)) + len(b)

    body = 1 + varint(0) + varint(0) + field(key) + field(value) + varint(len(headers))
    body += sum(field(k.encode()) + field(v) for k, v in headers)
    return 61 + varint(body) + body  # the batch header: 61 bytes


# ------------------------------------------------------------------ what the broker accepts


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_writes_batches_the_broker_accepts_and_both_readers_read(
    kafka_broker: ApacheKafka, codec: Optional[str]
) -> None:
    """Headers (one with a None value), null keys, null and empty values, caller-given
    CreateTimes out of order within a batch, several partitions, batches of 256 KiB and records
    of up to 300 KiB (lz4 frames of several 64 KiB blocks)."""
    partitions = 3
    topic = _topic(kafka_broker, partitions)
    rnd = random.Random(7)
    sent: List[Sent] = []
    with _producer(kafka_broker, compression_type=codec, batch_size=256 * 1024, linger_ms=20) as p:
        for i in range(400):
            key = None if i % 5 == 0 else f"key-{i % 37}".encode()
            value: Optional[bytes] = (f"value-{i}-" * (1 + i % 9)).encode()
            if i % 13 == 3 and key is not None:
                value = None  # a tombstone
            elif i % 29 == 4:
                value = b""
            elif i % 41 == 7:  # 100-300 KiB: half compressible text, half random bytes
                size = 100 * 1024 + (i * 997) % (200 * 1024)
                value = rnd.randbytes(size) if i % 2 else (b"large %d " % i * size)[:size]
            headers: Optional[Headers] = None
            if i % 4 == 0:
                headers = [("trace", f"t-{i}".encode()), ("empty", b""), ("none", None)]
            elif i % 4 == 1:
                headers = [("ü-ключ", "ünïcode".encode())]
            # caller-given CreateTimes, older than the producer's, some before the batch's first
            timestamp = 1_500_000_000_000 + i * 60_000 if i % 6 == 0 else None
            partition = 2 if i % 17 == 0 else None
            sent.append(_send(p, topic, value, key, headers, partition, timestamp))
        p.flush(30)
        expected = _expected(sent)
        stats = p.metrics()["producer-metrics"]
    assert sorted(expected) == list(range(partitions))
    # the records went out in batches larger than one lz4 block
    assert stats["batch-size-max"] > 64 * 1024
    _assert_read_back_exactly(kafka_broker, topic, partitions, expected)


def test_a_record_whose_batch_is_exactly_max_message_bytes_is_accepted(
    kafka_broker: ApacheKafka,
) -> None:
    """max.message.bytes bounds the batch: a record whose batch is exactly that size is written
    with its caller-given CreateTime; one byte more is refused (MESSAGE_TOO_LARGE) and, alone in
    its batch, fails with RecordTooLargeError."""
    limit = 64 * 1024
    topic = _topic(kafka_broker, 2, max_message_bytes=str(limit))
    key, headers = b"edge", [("h", b"1"), ("n", None)]
    n = limit - _batch_v2_size(key, b"", headers)
    while _batch_v2_size(key, bytes(n), headers) > limit:  # the longer length varints
        n -= 1
    value = (bytes(range(256)) * (n // 256 + 1))[:n]
    assert _batch_v2_size(key, value, headers) == limit
    ts = 1_234_567_890_123
    with _producer(kafka_broker, linger_ms=0) as p:
        fits = _send(p, topic, value, key, headers, partition=0, timestamp=ts)
        small = _send(p, topic, b"small", key, partition=1, timestamp=ts + 1)
        over = _send(p, topic, value + b"!", key, headers, partition=1, timestamp=ts)
        after = _send(p, topic, b"after", None, partition=1)
        p.flush(30)
        assert isinstance(_failure(over), errors.RecordTooLargeError)
        expected = _expected([fits, small, after])
    assert fits.future.get(0).offset == 0 and after.future.get(0).offset == 1
    _assert_read_back_exactly(kafka_broker, topic, 2, expected)


# ------------------------------------------------------------------ the broker's timestamps


@pytest.mark.parametrize("codec", [None, "zstd"])
def test_log_append_time_reaches_record_metadata_and_both_readers(
    kafka_broker: ApacheKafka, codec: Optional[str]
) -> None:
    """message.timestamp.type=LogAppendTime: the broker stamps each batch and answers the time
    in the Produce response; RecordMetadata.timestamp is that time (Java's semantics), not the
    CreateTime the producer or the caller set, and the readers see it as LogAppendTime."""
    partitions = 3
    topic = _topic(kafka_broker, partitions, message_timestamp_type="LogAppendTime")
    given = 1_600_000_000_000
    before = int(time.time() * 1000)
    with _producer(kafka_broker, compression_type=codec, linger_ms=5) as p:
        sent = [
            _send(p, topic, b"v%d" % i, b"k%d" % i, [("i", b"%d" % i)], None, given + i)
            if i % 2
            else _send(p, topic, b"v%d" % i, None, None, i % partitions)
            for i in range(60)
        ]
        p.flush(30)
        expected = _expected(sent, LOG_APPEND_TIME)
    after = int(time.time() * 1000)
    stamps = {row[4] for rows in expected.values() for row in rows}
    # the broker's clock (this machine's): within the sends, far from the given CreateTimes
    assert all(before - 1000 <= t <= after + 1000 for t in stamps), (before, stamps, after)
    _assert_read_back_exactly(kafka_broker, topic, partitions, expected)


# ------------------------------------------------------------------ what the broker refuses


def test_a_record_too_large_for_the_topic_fails_and_the_rest_of_the_request_is_written(
    kafka_broker: ApacheKafka,
) -> None:
    """A record larger than the topic's max.message.bytes but within max.request.size: the
    broker answers MESSAGE_TOO_LARGE for its partition only. Alone in its batch it is not split;
    it fails with RecordTooLargeError. The other partitions' batches of the same request, and
    the records sent to its partition before and after it, are written (the one after, when it
    went out behind the refused batch, was refused OUT_OF_ORDER_SEQUENCE_NUMBER and sent again
    with its sequence moved back, as Java's idempotent producer does)."""
    limit = 64 * 1024
    topic = _topic(kafka_broker, 3, max_message_bytes=str(limit))
    big = random.Random(3).randbytes(100 * 1024)
    with _producer(kafka_broker, linger_ms=1000) as p:
        first = _send(p, topic, b"before", None, partition=1)
        p.flush(10)
        # the batches wait for linger.ms but the big one's, which is full: when it is ready, one
        # request takes the first batch of every partition
        sent = [_send(p, topic, b"p0-%d" % i, b"k", partition=0) for i in range(3)]
        sent += [_send(p, topic, b"p2-%d" % i, None, [("h", None)], 2) for i in range(3)]
        too_large = _send(p, topic, big, b"big", partition=1)
        last = _send(p, topic, b"after", None, partition=1)
        p.flush(30)
        exc = _failure(too_large)
        assert type(exc) is errors.MessageSizeTooLargeError  # Java's RecordTooLargeException
        assert exc.errno == 10  # MESSAGE_TOO_LARGE
        expected = _expected([*sent, first, last])
        stats = p.metrics()["producer-metrics"]
    assert stats["batch-split-total"] == 0
    assert [row[2] for row in expected[1]] == [b"before", b"after"]
    _assert_read_back_exactly(kafka_broker, topic, 3, expected)
    # the broker's answer to librdkafka for the same record
    assert _librdkafka_errors(kafka_broker, topic, [(big, b"big", 1)]) == [
        CKError.MSG_SIZE_TOO_LARGE
    ]


def test_a_batch_larger_than_the_segment_fails_with_record_list_too_large(
    kafka_broker: ApacheKafka,
) -> None:
    """A batch within max.message.bytes but larger than segment.bytes: RECORD_LIST_TOO_LARGE
    (Java's RecordBatchTooLargeException), not retried, not split; the rest is written."""
    topic = _topic(kafka_broker, 2, segment_bytes=str(1 << 20), max_message_bytes=str(4 << 20))
    big = random.Random(5).randbytes(2 << 20)
    with _producer(kafka_broker, max_request_size=8 << 20, linger_ms=200) as p:
        ok = [_send(p, topic, b"ok-%d" % i, None, partition=i % 2) for i in range(4)]
        refused = _send(p, topic, big, None, partition=1)
        p.flush(30)
        exc = _failure(refused)
        # Java's RecordBatchTooLargeException (kafka-python's RecordListTooLargeError)
        assert type(exc) is errors.RecordBatchTooLargeError and exc.errno == 18
        expected = _expected(ok)
        stats = p.metrics()["producer-metrics"]
    assert stats["batch-split-total"] == 0
    _assert_read_back_exactly(kafka_broker, topic, 2, expected)


def test_a_batch_too_large_for_the_topic_is_split_and_every_record_written(
    kafka_broker: ApacheKafka,
) -> None:
    """Java's splitAndReenqueue. gzip batches are filled on the topic's estimated compression
    ratio: after very compressible records the estimate is low, and a batch of random bytes is
    filled far beyond batch.size and refused (MESSAGE_TOO_LARGE, more than one record). It is
    split into batches of batch.size on the estimate reset to 1.0, sent again, and written."""
    topic = _topic(kafka_broker, 1, max_message_bytes=str(24 * 1024))
    rnd = random.Random(11)
    with _producer(kafka_broker, compression_type="gzip", batch_size=16 * 1024, linger_ms=200) as p:
        # the estimate falls by 0.005 per batch of zeros (CompressionRatioEstimator)
        for _ in range(120):
            p.send_many(topic, [bytes(1024)] * 20, partition=0)
            p.flush(10)
        sent = [_send(p, topic, rnd.randbytes(1000), b"r%d" % i, partition=0) for i in range(200)]
        p.flush(30)
        expected = _expected(sent)
        stats = p.metrics()["producer-metrics"]
    assert stats["batch-split-total"] >= 1
    assert stats["record-error-total"] == 0
    zeros = 120 * 20  # first in the partition; their CreateTimes are the producer's clock's
    for reader in (read_back, read_back_java):
        got = _rows(reader(kafka_broker.bootstrap_servers, topic, 1, zeros + len(sent)))[0]
        assert [row[:4] for row in got[:zeros]] == [
            (o, None, bytes(1024), []) for o in range(zeros)
        ]
        assert got[zeros:] == expected[0], reader.__name__


# ------------------------------------------------------------------ record errors (KIP-467)

OTHER_RECORD = "part of a batch which had one or more invalid records"


def test_a_keyless_record_in_a_compacted_topic_fails_its_batch_only(
    kafka_broker: ApacheKafka,
) -> None:
    """cleanup.policy=compact: the broker refuses a batch holding a record without a key
    (INVALID_RECORD, naming the record). As in Java's producer, the record at fault fails with
    the broker's message for it, the other records of its batch with a KafkaError saying they
    were refused with it; the other partitions' batches and later batches are written."""
    topic = _topic(kafka_broker, 3, cleanup_policy="compact")
    where = f"in topic partition {topic}"
    with _producer(kafka_broker, linger_ms=200) as p:
        p0 = [_send(p, topic, b"a", b"k1", partition=0), _send(p, topic, b"no key", None, None, 0)]
        p0.append(_send(p, topic, b"b", b"k2", partition=0))
        p1 = [_send(p, topic, b"c", b"k1", [("h", None)], 1)]
        p2 = [_send(p, topic, b"x", None, partition=2), _send(p, topic, b"d", b"k", partition=2)]
        p2.append(_send(p, topic, b"y", None, partition=2))
        p.flush(30)
        # one record at fault: INVALID_RECORD's class, the broker's message for that record
        at_fault = _failure(p0[1])
        assert type(at_fault) is errors.InvalidRecordError
        assert at_fault.args == (f"Compacted topic cannot accept message without key {where}-0",)
        assert isinstance(at_fault.__cause__, errors.InvalidRecordError)
        assert "1 record errors" in str(at_fault.__cause__)  # the batch's error, as the broker
        for innocent in (_failure(p0[0]), _failure(p0[2]), _failure(p2[1])):
            assert type(innocent) is errors.KafkaError and OTHER_RECORD in str(innocent)
        # two at fault: InvalidRecordError each (Java: one code cannot tell their causes apart)
        for s in (p2[0], p2[2]):
            assert type(_failure(s)) is errors.InvalidRecordError
            assert str(_failure(s)).endswith(f"without key {where}-2")
        # send_many: each record of the call gets its own error too
        many = p.send_many(topic, [b"m0", b"m1", b"m2"], keys=[b"k", None, b"k"], partition=0)
        result = many.get(10)
        assert sorted(result.errors) == [0, 1, 2]
        assert type(result.errors[1]) is errors.InvalidRecordError
        assert [type(result.errors[i]) for i in (0, 2)] == [errors.KafkaError] * 2
        later = [_send(p, topic, b"later", b"k3", partition=0)]
        p.flush(30)
        expected = _expected(p1 + later)
    assert later[0].future.get(0).offset == 0  # nothing of the refused batches was written
    _assert_read_back_exactly(kafka_broker, topic, 3, expected)
    # librdkafka, and the confluent-kafka facade on this producer: every record of the refused
    # batch reports INVALID_RECORD
    records = [(b"a", b"k1", 1), (b"no key", None, 1), (b"b", b"k2", 1)]
    invalid = [CKError.INVALID_RECORD] * 3
    assert _librdkafka_errors(kafka_broker, topic, records) == invalid
    assert _librdkafka_errors(kafka_broker, topic, records, FacadeProducer) == invalid


def test_timestamps_out_of_range_fail_their_batch_with_each_records_error(
    kafka_broker: ApacheKafka,
) -> None:
    """message.timestamp.after.max.ms: CreateTimes more than an hour ahead are refused
    (INVALID_TIMESTAMP, naming each record). One at fault: InvalidTimestampError with the
    broker's message; two: InvalidRecordError each; the rest of each batch a KafkaError."""
    topic = _topic(kafka_broker, 3, message_timestamp_after_max_ms="3600000")
    now = int(time.time() * 1000)
    ahead = now + 3 * 3_600_000
    with _producer(kafka_broker, linger_ms=200) as p:
        one = [_send(p, topic, b"ok", None, partition=0, timestamp=now)]
        one.append(_send(p, topic, b"ahead", None, partition=0, timestamp=ahead))
        two = [_send(p, topic, b"ahead%d" % i, None, None, 1, ahead + i) for i in range(2)]
        two.append(_send(p, topic, b"ok", None, partition=1, timestamp=now))
        fine = [_send(p, topic, b"fine", b"k", partition=2, timestamp=now - 86_400_000)]
        p.flush(30)
        exc = _failure(one[1])
        assert type(exc) is errors.InvalidTimestampError
        assert f"Timestamp {ahead} of message with offset 1 is out of range" in str(exc)
        assert type(_failure(one[0])) is errors.KafkaError
        assert [type(_failure(s)) for s in two] == [
            errors.InvalidRecordError,
            errors.InvalidRecordError,
            errors.KafkaError,
        ]
        assert isinstance(_failure(two[0]).__cause__, errors.InvalidTimestampError)
        expected = _expected(fine)
    _assert_read_back_exactly(kafka_broker, topic, 3, expected)


def _librdkafka_errors(
    kafka: ApacheKafka,
    topic: str,
    records: List[Tuple[bytes, Optional[bytes], int]],
    producer_class: Callable[..., Any] = CKProducer,
) -> List[Optional[int]]:
    """Each record's delivery error code (None: delivered) when librdkafka (or the facade)
    produces ``records`` (value, key, partition) in one batch per partition."""
    reports: Dict[int, Optional[int]] = {}
    producer = producer_class(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "linger.ms": 200,
            "message.max.bytes": 8 << 20,
        }
    )
    for i, (value, key, partition) in enumerate(records):

        def report(err: Any, msg: Any, i: int = i) -> None:
            reports[i] = None if err is None else err.code()

        producer.produce(topic, value, key, partition, on_delivery=report)
    assert producer.flush(30) == 0
    if hasattr(producer, "close"):  # the facade's; librdkafka's ends with its last reference
        producer.close()
    return [reports[i] for i in range(len(records))]
