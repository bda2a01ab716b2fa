"""Records sent the moment a topic is created, by a producer already connected: the scenario in
which Apache Kafka answers a new partition's first Produce NOT_LEADER_OR_FOLLOWER while the
leader takes the next request a moment later (KAFKA-15591), and a producer that had several
batches of a partition in flight could see a later one written before the first.

``send_to_new_topic(client, kafka, ...)`` runs one round for one client (``cproducer``,
``librdkafka`` or ``java``): the producer connects and has a record acknowledged on a warm-up
topic, then the topic is created (``writable=False``: Metadata names the leaders, the leaders
may not take writes yet) and ``records`` keyed records go to it at once, then flush. Record
``n`` has the value ``b"<n>"`` and the key ``b"key-<n % keys>"``. The outcome of each record is
kept (partition and offset, or the error) with how long the round took; ``verdict`` then sets
it beside the topic read back by librdkafka: lost, duplicated, reordered within a partition.
``benchmarks/new_topic_order.py`` runs rounds of it for the three clients side by side.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections import Counter
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from tests.integration.readback import ConsumedRecord, by_partition, read_back
from tests.tools.apache_kafka import ApacheKafka, compiled, java

CLIENTS = ("cproducer", "librdkafka", "java")

# outcome of record n: (partition, offset) or the error's text
Outcome = Tuple[int, int, Optional[str]]


class Round(NamedTuple):
    client: str
    topic: str
    records: int
    outcomes: Dict[int, Outcome]  # record number -> its completion
    seconds: float  # from the first send to the end of the flush


class Verdict(NamedTuple):
    acked: int
    failed: int
    unfinished: int  # no completion at all
    lost: int  # acknowledged, not in the topic
    duplicated: int  # in the topic more than once
    reordered: int  # records in a partition after one sent later
    wrong_offsets: int  # found at another partition or offset than acknowledged at
    first_out_of_order: Optional[str]  # the first reordering, spelled out

    @property
    def clean(self) -> bool:
        return not (
            self.failed
            or self.unfinished
            or self.lost
            or self.duplicated
            or self.reordered
            or self.wrong_offsets
        )


def verdict(rnd: Round, found: List[ConsumedRecord]) -> Verdict:
    numbers = [int(r.value or b"-1") for r in found]
    in_topic = Counter(numbers)
    at = {int(r.value or b"-1"): (r.partition, r.offset) for r in found}
    acked = {n: o for n, o in rnd.outcomes.items() if o[2] is None}
    reordered, first = 0, None
    for partition, rs in sorted(by_partition(found).items()):
        for a, b in zip(rs, rs[1:]):
            if int(b.value or b"-1") < int(a.value or b"-1"):
                reordered += 1
                if first is None:
                    first = (
                        f"partition {partition}: record {int(b.value or b'-1')} at offset "
                        f"{b.offset} after record {int(a.value or b'-1')} at offset {a.offset}"
                    )
    return Verdict(
        acked=len(acked),
        failed=len(rnd.outcomes) - len(acked),
        unfinished=rnd.records - len(rnd.outcomes),
        lost=sum(1 for n in acked if n not in in_topic),
        duplicated=sum(1 for c in in_topic.values() if c > 1),
        reordered=reordered,
        # (offset -1: a batch answered DUPLICATE_SEQUENCE_NUMBER, its offset not known)
        wrong_offsets=sum(
            1 for n, o in acked.items() if n in at and o[1] != -1 and at[n] != (o[0], o[1])
        ),
        first_out_of_order=first,
    )


def send_to_new_topic(
    client: str,
    kafka: ApacheKafka,
    records: int = 20000,
    partitions: int = 6,
    keys: int = 1000,
    config: Optional[Dict[str, Any]] = None,
    timeout_s: float = 180.0,
) -> Round:
    """One round; ``config``: more producer settings (Java's names, as each client spells
    them)."""
    warm = f"new-topic-warm-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(warm, 1)
    topic = f"new-topic-{client}-{uuid.uuid4().hex[:8]}"
    run = {"cproducer": _cproducer, "librdkafka": _librdkafka, "java": _java}[client]
    return run(_Job(kafka, warm, topic, records, partitions, keys, dict(config or {}), timeout_s))


def read_and_judge(kafka: ApacheKafka, rnd: Round, partitions: int = 6) -> Verdict:
    acked = sum(1 for o in rnd.outcomes.values() if o[2] is None)
    found = read_back(kafka.bootstrap_servers, rnd.topic, partitions, acked, 60, settle_s=1.0)
    return verdict(rnd, found)


class _Job(NamedTuple):
    kafka: ApacheKafka
    warm: str  # the warm-up topic
    topic: str  # the topic to create and send to
    n: int  # records
    partitions: int
    keys: int
    config: Dict[str, Any]
    timeout_s: float


def _key(n: int, keys: int) -> bytes:
    return b"key-%d" % (n % keys)


def _cproducer(job: _Job) -> Round:
    kafka, warm, topic, n, partitions, keys, config, timeout_s = job
    from cproducer import KafkaProducer

    outcomes: Dict[int, Outcome] = {}

    def done(i: int) -> Any:
        def cb(md: Any, exc: Optional[BaseException]) -> None:
            outcomes[i] = (
                (-1, -1, repr(exc)) if exc is not None else (md.partition, md.offset, None)
            )

        return cb

    with KafkaProducer({"bootstrap.servers": kafka.bootstrap_servers, **config}) as producer:
        producer.send(warm, b"warm-up").get(30)
        kafka.create_topic(topic, partitions, writable=False)
        start = time.monotonic()
        for i in range(n):
            producer.send(topic, b"%d" % i, key=_key(i, keys), callback=done(i))
        producer.flush(timeout_s)
        seconds = time.monotonic() - start
    return Round("cproducer", topic, n, outcomes, seconds)


def _librdkafka(job: _Job) -> Round:
    kafka, warm, topic, n, partitions, keys, config, timeout_s = job
    from confluent_kafka import Producer

    outcomes: Dict[int, Outcome] = {}

    def cb(err: Any, msg: Any) -> None:
        i = int(msg.value())
        outcomes[i] = (
            (-1, -1, str(err)) if err is not None else (msg.partition(), msg.offset(), None)
        )

    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, **config}
    )
    producer.produce(warm, b"warm-up", on_delivery=lambda err, msg: None)
    if producer.flush(30) != 0:
        raise RuntimeError("librdkafka: the warm-up record was not delivered in 30 s")
    kafka.create_topic(topic, partitions, writable=False)
    start = time.monotonic()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, b"%d" % i, key=_key(i, keys), on_delivery=cb)
                break
            except BufferError:  # its queue is full: serve the delivery reports
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(timeout_s)
    seconds = time.monotonic() - start
    if left:
        raise RuntimeError(f"librdkafka: {left} records still queued after {timeout_s} s")
    return Round("librdkafka", topic, n, outcomes, seconds)


def _java(job: _Job) -> Round:
    kafka, warm, topic, n, partitions, keys, config, timeout_s = job
    args = [f"{k}={v}" for k, v in config.items()]
    proc = subprocess.Popen(
        [java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN",
         "-cp", compiled("NewTopicProducer"), "NewTopicProducer", kafka.bootstrap_servers, warm,
         topic, str(n), str(keys), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:
        line = proc.stdout.readline().strip()  # W: connected, the warm-up record acknowledged
        if line != "W":
            proc.kill()
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise RuntimeError(f"Java's producer did not warm up: {line!r} {err}")
        kafka.create_topic(topic, partitions, writable=False)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=timeout_s + 60)
    except BaseException:
        proc.kill()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"Java's producer failed ({proc.returncode}):\n{err}")
    outcomes: Dict[int, Outcome] = {}
    seconds = 0.0
    for row in out.splitlines():
        kind, *fields = row.split(" ", 3)
        if kind == "A":
            outcomes[int(fields[0])] = (int(fields[1]), int(fields[2]), None)
        elif kind == "E":
            outcomes[int(fields[0])] = (-1, -1, " ".join(fields[1:]))
        elif kind == "T":
            seconds = float(fields[0])
    return Round("java", topic, n, outcomes, seconds)
