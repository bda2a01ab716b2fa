"""Read back what was produced with real peers: librdkafka (confluent-kafka) and Java's
KafkaConsumer (``tests/java/ReadBack.java``), both in assign() mode from offset 0; then judge it
against what was sent with :func:`assert_delivered`: none lost, none twice, each partition in
send order."""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from typing import (
    Any,
    Callable,
    Dict,
    Hashable,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
)

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition

from tests.tools.apache_kafka import compiled, java


class ConsumedRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: List[Tuple[str, Optional[bytes]]]
    timestamp: int
    timestamp_type: int = 1  # librdkafka's numbering: 1 CreateTime, 2 LogAppendTime


def read_back(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout_s: float = 30.0,
    settle_s: float = 0.3,
    config: Optional[Dict[str, Any]] = None,
) -> List[ConsumedRecord]:
    """Every record of ``topic`` (partitions 0..n-1) from offset 0, until ``expected`` were seen
    (then ``settle_s`` more to catch extras, e.g. duplicates) or ``timeout_s``. ``config``: more
    consumer settings (security)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"readback-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 50,
            **(config or {}),
        }
    )
    try:
        consumer.assign([CKTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: List[ConsumedRecord] = []
        deadline = time.monotonic() + timeout_s
        settle_until: Optional[float] = None
        while time.monotonic() < deadline:
            if settle_until is not None and time.monotonic() > settle_until:
                break
            for msg in consumer.consume(num_messages=10000, timeout=0.1):
                if msg.error():
                    if msg.error().code() == -191:  # _PARTITION_EOF
                        continue
                    raise KafkaException(msg.error())
                out.append(
                    ConsumedRecord(
                        msg.topic(),
                        msg.partition(),
                        msg.offset(),
                        msg.key(),
                        msg.value(),
                        list(msg.headers() or []),
                        msg.timestamp()[1],
                        msg.timestamp()[0],
                    )
                )
            if settle_until is None and len(out) >= expected:
                settle_until = time.monotonic() + settle_s
        return out
    finally:
        consumer.close()


def committed(
    bootstrap: str,
    group: str,
    topic: str,
    partition: int = 0,
    stable: bool = True,
    timeout_s: float = 10.0,
) -> Optional[int]:
    """``group``'s committed offset of ``topic[partition]`` (None: none), by librdkafka's
    ``committed()``. ``stable``: asked as a read_committed consumer asks (librdkafka's default),
    with KIP-447's require_stable: while a transaction holds offsets of the group pending, Apache
    Kafka answers UNSTABLE_OFFSET_COMMIT and librdkafka asks again until the transaction ends (or
    the call times out). ``stable=False``: asked as a read_uncommitted consumer asks, answered at
    once with the offsets committed so far, pending ones not among them. (Tansu answers both at
    once.)"""
    isolation = "read_committed" if stable else "read_uncommitted"
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation}
    )
    try:
        (tp,) = consumer.committed([CKTopicPartition(topic, partition)], timeout=timeout_s)
        return None if tp.offset < 0 else int(tp.offset)
    finally:
        consumer.close()


def by_partition(records: List[ConsumedRecord]) -> Dict[int, List[ConsumedRecord]]:
    out: Dict[int, List[ConsumedRecord]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r.offset)
    return out


def value_of(record: ConsumedRecord) -> Optional[bytes]:
    """A record's identity by its value (the default of :func:`assert_delivered`)."""
    return record.value


def header_of(name: str) -> Callable[[ConsumedRecord], Optional[bytes]]:
    """A record's identity by its header ``name``, which each record carries once."""

    def get(record: ConsumedRecord) -> Optional[bytes]:
        values = [v for k, v in record.headers if k == name]
        assert len(values) == 1, f"header {name!r} not once in {record}"
        return values[0]

    return get


class OutOfOrder(NamedTuple):
    """Two neighbours of a partition (of one sending thread) whose offsets disagree with the
    order they were sent in: ``after`` is at the higher offset, yet was not sent after
    ``before``."""

    partition: int
    before: ConsumedRecord
    after: ConsumedRecord


def out_of_order(
    records: Iterable[ConsumedRecord],
    rank: Callable[[ConsumedRecord], Optional[int]],
    stream: Optional[Callable[[ConsumedRecord], Hashable]] = None,
) -> List[OutOfOrder]:
    """The order check of every read-back verdict in the tests. ``rank``: a record's place in
    its sender's order (None: not ranked, skipped). ``stream``: which sending thread a record
    came from, when several shared the producer; the producer keeps each thread's order within
    a partition, not an order between threads, so only records of one stream are compared.
    Neighbours are compared, so one record sent late counts once, not once per record it
    passed; a rank equal to the one before (the same record again) counts as out of order."""
    out: List[OutOfOrder] = []
    for partition, rs in sorted(by_partition(list(records)).items()):
        last: Dict[Hashable, Tuple[int, ConsumedRecord]] = {}
        for r in rs:
            k = rank(r)
            if k is None:
                continue
            s = None if stream is None else stream(r)
            prev = last.get(s)
            if prev is not None and k <= prev[0]:
                out.append(OutOfOrder(partition, prev[1], r))
            last[s] = (k, r)
    return out


def describe(o: OutOfOrder, identity: Callable[[ConsumedRecord], Hashable]) -> str:
    """``partition 3: record 17 at offset 2 after record 40 at offset 1``."""
    return (
        f"partition {o.partition}: record {_show(identity(o.after))} at offset {o.after.offset} "
        f"after record {_show(identity(o.before))} at offset {o.before.offset}"
    )


def _show(identity: Hashable) -> str:
    if isinstance(identity, bytes) and len(identity) <= 40:
        try:
            text = identity.decode("ascii")
        except UnicodeDecodeError:
            return repr(identity)
        return text if text.isprintable() and text.strip() == text and text else repr(identity)
    text = repr(identity)
    return text if len(text) <= 60 else text[:57] + "..."


def _some(items: List[str], limit: int = 8) -> str:
    more = f" (and {len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def assert_delivered(
    records: Sequence[ConsumedRecord],
    sent: Sequence[Hashable],
    *,
    identity: Callable[[ConsumedRecord], Hashable] = value_of,
    partitions: Optional[Sequence[Optional[int]]] = None,
    thread_of: Optional[Callable[[Hashable], Hashable]] = None,
    may_be_missing: Iterable[Hashable] = (),
    context: str = "",
) -> None:
    """A producer's contract, checked on the topic read back: none lost, none twice, and within
    each partition the offsets follow the send order.

    ``sent``: each record's identity (``identity(record)`` of the record read back: its value by
    default, :func:`header_of` for a header), in the order the test sent them; every record read
    back must be one of them. ``partitions``: beside ``sent``, the partition each record was
    sent to or acknowledged at (None: unknown). ``thread_of``: when several threads sent, the
    thread of an identity; ``sent`` then holds each thread's records in that thread's order,
    and only records of one thread are held to an order. ``may_be_missing``: records whose send
    failed: absent or present once (Java says a failed record may still have been written), in
    order if present. ``context``: said first in the failure (which reader, which round)."""
    rank: Dict[Hashable, int] = {}
    for i, s in enumerate(sent):
        if s in rank:
            raise ValueError(f"sent names record {_show(s)} twice: identities must be unique")
        rank[s] = i
    optional = set(may_be_missing)
    where: Dict[Hashable, List[ConsumedRecord]] = {}
    for r in records:
        where.setdefault(identity(r), []).append(r)
    problems: List[str] = []
    lost = [_show(s) for s in sent if s not in where and s not in optional]
    if lost:
        problems.append(f"{len(lost)} lost: {_some(lost)}")
    twice = [
        f"{_show(s)} at " + " and ".join(f"{r.partition}:{r.offset}" for r in rs)
        for s, rs in where.items()
        if len(rs) > 1
    ]
    if twice:
        problems.append(f"{len(twice)} written more than once (partition:offset): {_some(twice)}")
    unknown = [
        f"{_show(s)} at {rs[0].partition}:{rs[0].offset}"
        for s, rs in where.items()
        if s not in rank
    ]
    if unknown:
        problems.append(f"{len(unknown)} never sent: {_some(unknown)}")
    if partitions is not None:
        if len(partitions) != len(sent):
            raise ValueError(f"{len(partitions)} partitions for {len(sent)} records sent")
        misplaced = [
            f"{_show(s)} in partition {r.partition}, sent to {partitions[rank[s]]}"
            for s, rs in where.items()
            if s in rank and partitions[rank[s]] is not None
            for r in rs
            if r.partition != partitions[rank[s]]
        ]
        if misplaced:
            problems.append(f"{len(misplaced)} in another partition: {_some(misplaced)}")
    stream: Optional[Callable[[ConsumedRecord], Hashable]] = None
    if thread_of is not None:
        of = thread_of
        stream = lambda r: of(identity(r))  # noqa: E731
    order = [
        describe(o, identity)
        for o in out_of_order(records, lambda r: rank.get(identity(r)), stream)
    ]
    if order:
        problems.append(f"{len(order)} out of send order: {_some(order, 5)}")
    if problems:
        head = f"{context}: " if context else ""
        raise AssertionError(
            f"{head}{len(sent)} records sent, {len(records)} read back; " + "; ".join(problems)
        )


_TIMESTAMP_TYPES = {"CreateTime": 1, "LogAppendTime": 2}


def _b64(field: str) -> Optional[bytes]:
    return None if field == "-" else base64.b64decode(field)


def read_back_java(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout_s: float = 60.0,
    config: Optional[Dict[str, Any]] = None,
) -> List[ConsumedRecord]:
    """The same as :func:`read_back`, by Java's KafkaConsumer (kafka-clients from the Maven
    cache): every record from offset 0 until ``expected`` were seen and a second more brought
    nothing, or ``timeout_s``. ``config``: more consumer settings, Java names."""
    args = [f"{k}={v}" for k, v in (config or {}).items()]
    proc = subprocess.run(
        [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN",
         "-cp", compiled("ReadBack"), "ReadBack", bootstrap, topic, str(partitions),
         str(expected), str(int(timeout_s * 1000)), *args],
        capture_output=True, text=True, timeout=timeout_s + 60,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"Java's KafkaConsumer failed ({proc.returncode}):\n{proc.stderr}")
    out: List[ConsumedRecord] = []
    for line in proc.stdout.splitlines():
        part, offset, ts, ts_type, key, value, headers = line.split("\t")
        out.append(
            ConsumedRecord(
                topic,
                int(part),
                int(offset),
                _b64(key),
                _b64(value),
                [
                    (base64.b64decode(k).decode(), _b64(v))
                    for k, v in (h.split(":") for h in headers.split(",") if h)
                ],
                int(ts),
                _TIMESTAMP_TYPES[ts_type],
            )
        )
    return out
