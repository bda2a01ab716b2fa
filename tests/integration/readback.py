"""Read back what was produced with real peers: librdkafka (confluent-kafka) and Java's
KafkaConsumer (``tests/java/ReadBack.java``), both in assign() mode from offset 0."""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

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
