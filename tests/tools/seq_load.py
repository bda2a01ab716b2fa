"""A steady stream of numbered records from one client, every outcome kept: the load the
cluster-fault tests and ``benchmarks/cluster_faults.py`` put on a cluster while they break it.

Record ``n`` has the value ``b"value-<n>"`` and the header ``seq=<n>``; it goes to partition
``n % partitions`` (``partitions=0``: unkeyed, the partitioner chooses). Three clients send the same
way, each with its own defaults unless ``config`` says otherwise:

- ``CproducerLoad``: ``cproducer.KafkaProducer``, ``send()`` with a callback, from one thread;
- ``LibrdkafkaLoad``: ``confluent_kafka.Producer``, ``produce()`` and a thread serving ``poll()``;
- ``JavaLoad``: Java's ``KafkaProducer`` in a JVM (``tests/java/SeqProducer.java``), its events
  read from its output.

Times are ``time.monotonic()`` seconds (Java's ``System.nanoTime()`` reads the same clock).
``stop()`` ends the sending, waits for every record's outcome and returns the ``LoadResult``;
``LoadResult.verdict(records)`` sets what the client was told beside what a reader found.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Tuple,
)

from tests.integration.readback import ConsumedRecord, describe, out_of_order
from tests.tools.apache_kafka import start_java


class Ack(NamedTuple):
    at: float  # monotonic seconds
    partition: int  # -1 when it failed
    offset: int  # -1 when it failed
    error: Optional[str]  # None: acknowledged


class Verdict(NamedTuple):
    """What a reader of the topic found, against what the client said."""

    sent: int  # records send() took
    acked: int  # ... acknowledged
    failed: int  # ... completed with an error
    unfinished: int  # ... never completed (a lost promise)
    lost: int  # acknowledged, not in the topic
    duplicated: int  # records in the topic more than once
    reordered: int  # neighbours in a partition out of sending order
    failed_but_written: int  # failed, yet in the topic (allowed: Java says so of timeouts)
    wrong_offsets: int  # acknowledged at another offset or partition than found at
    # the first few records lost, duplicated or out of order, spelled out for a failure message
    details: Tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (
            self.unfinished or self.lost or self.duplicated or self.reordered or self.wrong_offsets
        )


class LoadResult:
    def __init__(self, client: str) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.sent_at: Dict[int, float] = {}  # seq -> when send() was called
        self.acks: Dict[int, List[Ack]] = {}  # seq -> its completions (one, if all is well)
        self.refused: List[Tuple[int, float, str]] = []  # send() raised: (seq, time, error)

    def ack(self, seq: int, ack: Ack) -> None:
        with self.lock:
            self.acks.setdefault(seq, []).append(ack)

    # -- while the load runs ------------------------------------------------------------------

    def first_ack_after(
        self, t: float, partitions: Optional[Iterable[int]] = None
    ) -> Optional[float]:
        """When the first record sent after ``t`` (to ``partitions``) was acknowledged."""
        want = None if partitions is None else set(partitions)
        with self.lock:
            times = [
                a[0].at
                for s, a in self.acks.items()
                if a[0].error is None
                and self.sent_at.get(s, -1.0) > t
                and (want is None or a[0].partition in want)
            ]
        return min(times) if times else None

    def wait_ack_after(
        self, t: float, timeout: float, partitions: Optional[Iterable[int]] = None
    ) -> Optional[float]:
        """Waits until a record sent after ``t`` is acknowledged; the stall (its time - ``t``)."""
        deadline = time.monotonic() + timeout
        parts = None if partitions is None else list(partitions)
        while time.monotonic() < deadline:
            first = self.first_ack_after(t, parts)
            if first is not None:
                return first - t
            time.sleep(0.05)
        return None

    def errors(self) -> List[Tuple[int, str]]:
        with self.lock:
            return [(s, a[0].error) for s, a in self.acks.items() if a[0].error is not None]

    def shares(self, since: float = 0.0, until: float = float("inf")) -> Counter:
        """Records per partition among those acknowledged between ``since`` and ``until``."""
        with self.lock:
            return Counter(
                a[0].partition
                for a in self.acks.values()
                if a[0].error is None and since <= a[0].at < until
            )

    # -- after it --------------------------------------------------------------------------------

    def verdict(self, records: List[ConsumedRecord], partitions: int = 0) -> Verdict:
        """``records``: the topic read back (``read_back`` / ``read_back_java``)."""
        seqs = [seq_of(r) for r in records]
        in_topic = Counter(seqs)
        at = {seq_of(r): (r.partition, r.offset) for r in records}
        ok = {s: a[0] for s, a in self.acks.items() if a[0].error is None}
        failed = {s for s, a in self.acks.items() if a[0].error is not None}
        order = out_of_order(records, seq_of)
        lost = sorted(s for s in ok if s not in in_topic)
        twice = sorted(s for s, n in in_topic.items() if n > 1)
        details = tuple(
            [f"lost: record {s}" for s in lost[:3]]
            + [f"in the topic {in_topic[s]} times: record {s}" for s in twice[:3]]
            + [describe(o, seq_of) for o in order[:3]]
        )
        # (offset -1: a batch answered DUPLICATE_SEQUENCE_NUMBER, its offset not known)
        wrong = sum(
            1
            for s, a in ok.items()
            if s in at and at[s] != (a.partition, a.offset) and a.offset != -1
        ) + sum(1 for s, a in ok.items() if partitions and a.partition != s % partitions)
        return Verdict(
            sent=len(self.sent_at),
            acked=len(ok),
            failed=len(failed),
            unfinished=len(set(self.sent_at) - set(self.acks)),
            lost=len(lost),
            duplicated=sum(1 for n in in_topic.values() if n > 1)
            + sum(1 for a in self.acks.values() if len(a) > 1),
            reordered=len(order),
            failed_but_written=sum(1 for s in failed if s in in_topic),
            wrong_offsets=wrong,
            details=details,
        )


def seq_of(record: ConsumedRecord) -> int:
    values = [v for k, v in record.headers if k == "seq"]
    assert len(values) == 1 and values[0] is not None, record
    return int(values[0])


def paced(stop: threading.Event, rate: float) -> Iterator[int]:
    """0, 1, 2 ... each at its time for ``rate`` a second (0: at once), until ``stop`` is set."""
    start, n = time.monotonic(), 0
    while not stop.is_set():
        if rate:
            wait = start + n / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        yield n
        n += 1


class Load:
    """One client sending numbered records to ``topic`` at ``rate`` records/s (0: no cap)."""

    client = ""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        rate: float,
        config: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.config = dict(config or {})
        self.result = LoadResult(self.client)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.failure: Optional[BaseException] = None

    def start(self, warm_up_timeout: float = 60.0) -> Load:
        """Starts sending and waits until the first record is acknowledged (the client
        connected, its JIT or its first metadata done): faults start on a running stream."""
        self._thread = threading.Thread(target=self._guarded, name=f"{self.client}-load")
        self._thread.start()
        deadline = time.monotonic() + warm_up_timeout
        while not self.result.acks:
            if self.failure is not None or not self._thread.is_alive():
                self.stop()  # raises the load's failure, if any
                raise RuntimeError(f"{self.client}: the load ended before any acknowledgement")
            if time.monotonic() > deadline:
                self.stop(30)
                raise TimeoutError(f"{self.client}: no record acknowledged in {warm_up_timeout} s")
            time.sleep(0.02)
        return self

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc

    def _paced(self) -> Iterable[int]:
        """Sequence numbers, each at its time, until stop()."""
        return paced(self._stop, self.rate)

    def end_sending(self) -> None:
        """No more records from now on (``stop()`` still waits for their outcomes)."""
        self._stop.set()

    def stop(self, timeout: float = 180.0) -> LoadResult:
        """Ends the sending and waits (flush) for every record's outcome."""
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"{self.client}: records still pending after {timeout} s")
        if self.failure is not None:
            raise self.failure
        return self.result

    def _run(self) -> None:
        raise NotImplementedError

    def _partition(self, seq: int) -> Optional[int]:
        return seq % self.partitions if self.partitions else None


class CproducerLoad(Load):
    client = "cproducer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.producer: Any = None

    def _run(self) -> None:
        from cproducer import KafkaProducer

        self.producer = producer = KafkaProducer(
            {"bootstrap.servers": self.bootstrap, **self.config}
        )
        result = self.result
        try:
            for seq in self._paced():
                now = time.monotonic()
                result.sent_at[seq] = now
                try:
                    producer.send(
                        self.topic,
                        b"value-%d" % seq,
                        partition=self._partition(seq),
                        headers=[("seq", b"%d" % seq)],
                        callback=self._callback(seq),
                    )
                except Exception as exc:  # noqa: BLE001 - a refusal is an outcome
                    del result.sent_at[seq]
                    result.refused.append((seq, time.monotonic(), repr(exc)))
            producer.flush()
        finally:
            producer.close()

    def _callback(self, seq: int) -> Callable[[Any, Optional[BaseException]], None]:
        def done(md: Any, exc: Optional[BaseException]) -> None:
            now = time.monotonic()
            if exc is None:
                self.result.ack(seq, Ack(now, md.partition, md.offset, None))
            else:
                self.result.ack(seq, Ack(now, -1, -1, repr(exc)))

        return done


class LibrdkafkaLoad(Load):
    client = "librdkafka"

    def _run(self) -> None:
        from confluent_kafka import KafkaException, Producer

        self.producer = producer = Producer({"bootstrap.servers": self.bootstrap, **self.config})
        result, polling = self.result, threading.Event()

        def poll() -> None:
            while not polling.is_set():
                producer.poll(0.02)

        poller = threading.Thread(target=poll, name="librdkafka-poll", daemon=True)
        poller.start()
        try:
            for seq in self._paced():
                result.sent_at[seq] = time.monotonic()
                while True:
                    try:
                        kwargs: Dict[str, Any] = {}
                        if self.partitions:
                            kwargs["partition"] = seq % self.partitions
                        producer.produce(
                            self.topic,
                            b"value-%d" % seq,
                            headers=[("seq", b"%d" % seq)],
                            on_delivery=self._callback(seq),
                            **kwargs,
                        )
                        break
                    except BufferError:
                        # the queue is full: librdkafka's way of blocking (the poll thread
                        # drains it)
                        if self._stop.is_set():
                            raise
                        time.sleep(0.01)
                    except KafkaException as exc:
                        del result.sent_at[seq]
                        result.refused.append((seq, time.monotonic(), repr(exc)))
                        break
            polling.set()
            poller.join()
            left = producer.flush(300)
            if left:
                raise TimeoutError(f"librdkafka: {left} records not delivered after flush")
        finally:
            polling.set()

    def _callback(self, seq: int) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            now = time.monotonic()
            if err is None:
                self.result.ack(seq, Ack(now, msg.partition(), msg.offset(), None))
            else:
                self.result.ack(seq, Ack(now, -1, -1, str(err)))

        return done


class JavaLoad(Load):
    client = "java"

    def _run(self) -> None:
        settings = [f"{k}={v}" for k, v in self.config.items()]
        proc, stderr, drain = start_java(
            "SeqProducer",
            [self.bootstrap, self.topic, str(self.partitions), str(self.rate), *settings],
        )
        assert proc.stdin is not None and proc.stdout is not None
        stopper = threading.Thread(target=self._close_stdin, args=(proc,), daemon=True)
        stopper.start()
        result, done = self.result, False
        try:
            for line in proc.stdout:
                kind, _, rest = line.rstrip("\n").partition(" ")
                if kind == "D":
                    done = True
                    continue
                seq_s, t_s, *tail = rest.split(" ", 2 if kind in ("X", "E") else 3)
                seq, at = int(seq_s), int(t_s) / 1e9
                if kind == "S":
                    result.sent_at[seq] = at
                elif kind == "A":
                    result.ack(seq, Ack(at, int(tail[0]), int(tail[1]), None))
                elif kind == "E":
                    result.ack(seq, Ack(at, -1, -1, tail[0] if tail else ""))
                elif kind == "X":
                    result.refused.append((seq, at, tail[0] if tail else ""))
        finally:
            proc.wait(60)
            drain.join(5)
        if not done or proc.returncode != 0:
            raise RuntimeError(f"SeqProducer exited {proc.returncode}:\n{''.join(stderr)[-4000:]}")

    def _close_stdin(self, proc: subprocess.Popen) -> None:
        self._stop.wait()
        assert proc.stdin is not None
        proc.stdin.close()


CLIENTS = {"cproducer": CproducerLoad, "librdkafka": LibrdkafkaLoad, "java": JavaLoad}
# Each client's settings for "the producer with idempotence on": Java's and cproducer's default,
# librdkafka's off by default (enable.idempotence=false), so asked for.
IDEMPOTENT: Dict[str, Dict[str, Any]] = {
    "cproducer": {},
    "librdkafka": {"enable.idempotence": True},
    "java": {},
}
