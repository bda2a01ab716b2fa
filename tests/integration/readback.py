"""Read back what was produced, with librdkafka (confluent-kafka) in assign() mode: a real peer."""

from __future__ import annotations

import time
import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as CKTopicPartition


class ConsumedRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: List[Tuple[str, Optional[bytes]]]
    timestamp: int


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
                    )
                )
            if settle_until is None and len(out) >= expected:
                settle_until = time.monotonic() + settle_s
        return out
    finally:
        consumer.close()


def by_partition(records: List[ConsumedRecord]) -> Dict[int, List[ConsumedRecord]]:
    out: Dict[int, List[ConsumedRecord]] = {}
    for r in records:
        out.setdefault(r.partition, []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r.offset)
    return out
