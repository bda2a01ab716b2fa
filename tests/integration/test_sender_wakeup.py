"""The Sender's wake-up under concurrent appends: no record waits for a wake-up that was skipped.

With ``linger_ms=0`` a new batch is sendable at once. A record whose wake-up were lost would sit
until the idle Sender's ``select`` times out (its poll is capped at one second), and then go: so
the producer's selector checks every ``select`` that returned no event for a wake-up that came
while it waited without writing to the self-pipe. The appending threads mix fire-and-forget runs
(appends while the Sender drains: the flag path) with waits for their last record (the Sender
goes idle in ``select``: the self-pipe path), on shared partitions.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from cproducer import KafkaProducer
from cproducer.localbroker import LocalBroker
from tests.integration.readback import assert_delivered, read_back

THREADS = 8
ROUNDS = 40
RUN = 25  # records per fire-and-forget run
PARTITIONS = 3
#: a hang detector only
BOUND_S = 60


def lost_wakeup_counting_selector(client: Dict[str, Any], lost: List[float]) -> Any:
    class LostWakeupCountingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
        """The platform's selector, checking each select that returned no event: a wake-up
        that came while it waited must have written to the self-pipe (which is an event), so
        a wake-up flag set but nothing written is a wake-up the poller did not get."""

        def select(self, timeout: Optional[float] = None) -> Any:
            events = super().select(timeout)
            waker = client["waker"] if client else None
            if not events and waker is not None and waker.requested and not waker.signalled:
                lost.append(timeout or 0.0)
            return events

    return LostWakeupCountingSelector


def test_concurrent_appends_all_delivered_no_wakeup_lost(
    broker: LocalBroker, new_topic: Any
) -> None:
    topic = new_topic(partitions=PARTITIONS)
    sent: Dict[int, List[Tuple[int, Any]]] = defaultdict(list)  # thread -> (seq, future)
    failures: List[BaseException] = []
    client: Dict[str, Any] = {}
    lost: List[float] = []
    with KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        batch_size=2048,
        selector=lost_wakeup_counting_selector(client, lost),
    ) as producer:
        client["waker"] = producer._client.waker
        producer.send(topic, b"warm-up", partition=0).get(timeout=BOUND_S)
        start = threading.Barrier(THREADS)

        def worker(t: int) -> None:
            try:
                start.wait()
                seq = 0
                for _ in range(ROUNDS):
                    for _ in range(RUN):
                        value = f"{t}:{seq}".encode()
                        future = producer.send(topic, value, partition=t % PARTITIONS)
                        sent[t].append((seq, future))
                        seq += 1
                    # the run's last record: the Sender goes idle while this thread waits
                    sent[t][-1][1].get(timeout=BOUND_S)
            except BaseException as exc:  # reported by the main thread
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert failures == []
        assert lost == [], "a wake-up came while the Sender selected, and it slept on"
        offsets: Dict[int, List[int]] = defaultdict(list)
        for t in range(THREADS):
            assert [seq for seq, _ in sent[t]] == list(range(ROUNDS * RUN))
            metadata = [fut.get(timeout=BOUND_S) for _, fut in sent[t]]
            assert {md.partition for md in metadata} == {t % PARTITIONS}
            thread_offsets = [md.offset for md in metadata]
            # one thread's records keep their order in their partition
            assert thread_offsets == sorted(thread_offsets)
            offsets[t % PARTITIONS].extend(thread_offsets)
        for partition, got in offsets.items():
            assert len(set(got)) == len(got), f"partition {partition}: an offset given twice"
        assert sum(len(v) for v in offsets.values()) == THREADS * ROUNDS * RUN
    # librdkafka reads every record back once, each thread's in its send order
    records = read_back(broker.bootstrap_servers, topic, PARTITIONS, THREADS * ROUNDS * RUN + 1)
    per_thread = [f"{t}:{seq}".encode() for t in range(THREADS) for seq in range(ROUNDS * RUN)]
    assert_delivered(
        records,
        [b"warm-up", *per_thread],
        partitions=[0] + [t % PARTITIONS for t in range(THREADS) for _ in range(ROUNDS * RUN)],
        thread_of=lambda v: v.split(b":")[0],
    )


def test_aio_sends_wake_an_idle_sender(broker: LocalBroker, new_topic: Any) -> None:
    """cproducer.aio's C send path: each record awaited before the next, so every append finds
    the Sender idle in select, between runs of appends that find it busy."""
    from cproducer.aio import AIOKafkaProducer

    topic = new_topic(partitions=PARTITIONS)

    async def main() -> List[Any]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
        await producer.start()
        out: List[Any] = []
        try:
            for round_ in range(ROUNDS):
                futures = [
                    await producer.send(
                        topic, f"{round_}:{i}".encode(), partition=round_ % PARTITIONS
                    )
                    for i in range(RUN)
                ]
                out.extend(await asyncio.wait_for(asyncio.gather(*futures), BOUND_S))
                single = await producer.send(topic, b"alone", partition=0)
                out.append(await asyncio.wait_for(single, BOUND_S))
        finally:
            await producer.stop()
        return out

    metadata = asyncio.run(main())
    assert len(metadata) == ROUNDS * (RUN + 1)
    by_partition: Dict[int, List[int]] = defaultdict(list)
    for md in metadata:
        by_partition[md.partition].append(md.offset)
    for partition, got in by_partition.items():
        # awaited in send order, one partition's offsets rise with it
        assert got == sorted(got) and len(set(got)) == len(got), partition
    records = read_back(broker.bootstrap_servers, topic, PARTITIONS, ROUNDS * (RUN + 1))
    # records are named by the place in send order of the future that reported their offset
    # (the "alone" records are alike)
    place = {(md.partition, md.offset): i for i, md in enumerate(metadata)}
    assert_delivered(
        records,
        range(len(metadata)),
        identity=lambda r: place.get((r.partition, r.offset)),
        partitions=[md.partition for md in metadata],
    )
