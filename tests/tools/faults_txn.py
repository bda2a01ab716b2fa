"""Transactions across a failure: a transactional load from cproducer, librdkafka and Java's
producer, and the fault that kills the transaction coordinator's broker between a transaction's
last send and its commit (issue 28, item 6).

The load (``TxnLoad``: ``CproducerTxnLoad``, ``LibrdkafkaTxnLoad``, ``JavaTxnLoad`` via
``tests/java/SeqTxnProducer.java``) runs transactions of ``txn_records`` numbered records one after
the other: record ``n`` has the value ``b"value-<n>"``, the headers ``seq=<n>`` and ``txn=<k>``
(its transaction) and goes to partition ``n % partitions``. Each transaction ends as its client's
documentation says a transactional application should end it, but every ``abort_every``-th,
which the application aborts, its records flushed first (in the log, for the readers to skip):

- the commit raised a timeout: the commit is called again (Java's javadoc of
  ``commitTransaction``: "it is safe to retry", an abort is not allowed then); librdkafka's
  ``retriable()`` errors the same;
- an abortable error (Java: any ``KafkaException`` but ``ProducerFencedException``,
  ``OutOfOrderSequenceException`` and ``AuthorizationException``; librdkafka:
  ``txn_requires_abort()``; cproducer: Java's split, its abortable error being
  ``TransactionAbortableError``): the transaction is aborted and the next one begins;
- a fatal error: the load ends there (the application would close the producer).

``hold_next()`` stops the next transaction between its last send and its commit, its records
flushed (every one written to its partition, not yet committed); ``release()`` lets it commit.

Times are ``time.monotonic()`` seconds (Java's ``System.nanoTime()`` is the same clock).
``TxnLoadResult`` is a ``LoadResult`` whose records are acknowledged by their transaction's outcome
(``finish()``, done by ``stop()``): a committed transaction's records as acknowledged at the offsets
their partition leaders gave them, an aborted one's as failed, those of a transaction without an
outcome as unfinished. ``LoadResult.verdict`` then counts records lost (committed, not visible to a
read_committed reader), duplicated, reordered and ``failed_but_written`` (aborted, yet visible);
``TxnLoadResult.txn_verdict`` counts transactions, half-visible ones among them.

The faults (``run_txn_fault(cluster, client, config, name)`` -> ``FaultRun``; ``TXN_FAULTS`` names
them): ``txn-coordinator-killed`` (the coordinator's broker killed before the commit is called) and
``txn-coordinator-killed-mid-commit`` (paused, then killed with the commit's EndTxn unread in its
socket buffer). Both are in ``cluster_faults.FAULTS`` with their runner (``run_fault`` calls it)
and their cluster's settings (``CLUSTER_PROPERTIES``: dead brokers fenced after 4 s).
"""

from __future__ import annotations

import functools
import os
import subprocess
import threading
import time
import uuid
from collections import Counter
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple

from cproducer.errors import KafkaError
from cproducer.localbroker import request
from cproducer.protocol import KEY_TYPE_TRANSACTION, FindCoordinatorRequest
from tests.integration.readback import (
    ConsumedRecord,
    describe,
    out_of_order,
    read_back,
    read_back_java,
)
from tests.tools.apache_kafka import ApacheKafkaCluster, start_java
from tests.tools.cluster_faults import FAULTS, Fault, FaultRun, client_config, topic_name
from tests.tools.seq_load import Ack, LoadResult, paced, seq_of

FAULT = "txn-coordinator-killed"
FAULT_MID_COMMIT = "txn-coordinator-killed-mid-commit"
# the cluster these faults run on: a killed broker's leaderships (its __transaction_state
# partitions among them) move 4 s after its last heartbeat (9 s by default)
CLUSTER_PROPERTIES = {"broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500"}
PARTITIONS = 6
TXN_RECORDS = 100  # records per transaction
TXN_RATE = 5.0  # transactions/s at most: 500 records/s, room for the brokers on a busy machine
# every ABORT_EVERY-th transaction is aborted by the application, its records flushed first: the
# log holds aborted records for the read_committed readers to skip
ABORT_EVERY = 5
READ_COMMITTED = {"isolation.level": "read_committed"}
# Java's defaults, which the three clients keep here: how long commitTransaction blocks
# (max.block.ms; librdkafka's commit_transaction is given the same), how long the coordinator
# lets a transaction stay open (transaction.timeout.ms; librdkafka's default is the same)
COMMIT_TIMEOUT_S = 60.0
TRANSACTION_TIMEOUT_S = 60.0
# calls of commit (or abort) a transaction gets before the load gives up as on a fatal error;
# Java's loop has no end, a test needs one
MAX_ATTEMPTS = 4
# the mid-commit fault: transactions to try it on, and how long the first ones wait for the
# EndTxn in the paused broker's buffer (below the cluster's 4 s session timeout)
MID_COMMIT_ATTEMPTS = 3
MID_COMMIT_WAIT_S = 3.0
RESTART_TIMEOUT_S = 300.0

COMMITTED, ABORTED = "committed", "aborted"


class Txn:
    """One transaction as its client saw it."""

    def __init__(self, k: int, first_seq: int, began_at: float) -> None:
        self.k = k
        self.first_seq = first_seq
        self.seqs: List[int] = []  # records send() took
        self.began_at = began_at
        self.held_at: Optional[float] = None  # stopped before the commit (hold_next)
        self.ended_at: Optional[float] = None  # commit or abort returned
        self.outcome: Optional[str] = None  # COMMITTED, ABORTED; None: no outcome (fatal)
        self.errors: List[str] = []  # what commit/abort raised on the way, in order

    def __repr__(self) -> str:
        return (
            f"Txn({self.k}, {len(self.seqs)} records from {self.first_seq}, {self.outcome}, "
            f"errors={self.errors})"
        )


class TxnVerdict(NamedTuple):
    """What a read_committed reader found, transaction by transaction."""

    transactions: int  # begun
    committed: int
    aborted: int
    unended: int  # no outcome: a fatal error (or the load gave up) while it was open
    records_sent: int
    records_committed: int
    visible: int  # distinct records read
    lost: int  # records of committed transactions not read
    duplicated: int  # records read more than once
    reordered: int  # neighbours in a partition out of sending order
    aborted_written: int  # records of aborted transactions their leaders acknowledged (in the log)
    aborted_visible: int  # records of aborted transactions read
    half_visible: int  # transactions partly read (some of their records, not all)
    unended_visible: int  # transactions without an outcome read whole (the commit went through)
    reordered_at: Tuple[str, ...] = ()  # the first few records out of order, spelled out

    @property
    def clean(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.reordered
            or self.aborted_visible
            or self.half_visible
            or self.unended
        )


class TxnLoadResult(LoadResult):
    def __init__(self, client: str) -> None:
        super().__init__(client)
        self.txns: Dict[int, Txn] = {}
        self.deliveries: Dict[int, Ack] = {}  # seq -> its partition leader's answer
        self.fatal: Optional[str] = None  # the fatal error the load ended on
        self.init_at: Optional[float] = None  # init_transactions returned

    def delivered(self, seq: int, ack: Ack) -> None:
        with self.lock:
            self.deliveries[seq] = ack

    def ended(self, txn: Txn, outcome: str) -> None:
        with self.lock:
            txn.ended_at = time.monotonic() if txn.ended_at is None else txn.ended_at
            txn.outcome = outcome

    def finish(self) -> None:
        """Each record's outcome is its transaction's (see the module's docstring)."""
        with self.lock:
            self.acks.clear()
            for txn in self.txns.values():
                if txn.outcome is None or txn.ended_at is None:
                    continue
                for seq in txn.seqs:
                    d = self.deliveries.get(seq)
                    if txn.outcome == ABORTED:
                        self.acks[seq] = [Ack(txn.ended_at, -1, -1, f"aborted: {txn.errors}")]
                    elif d is not None and d.error is None:
                        self.acks[seq] = [Ack(txn.ended_at, d.partition, d.offset, None)]
                    else:  # committed, yet its record failed or never was answered
                        error = d.error if d is not None else "no answer"
                        self.acks[seq] = [Ack(txn.ended_at, -1, -1, f"committed, but {error}")]

    # -- while the load runs ------------------------------------------------------------------

    def ended_txns(self) -> List[Txn]:
        with self.lock:
            return [t for t in self.txns.values() if t.outcome is not None]

    def committed_since(self, t: float) -> List[Txn]:
        """Transactions begun after ``t`` and committed."""
        return [x for x in self.ended_txns() if x.outcome == COMMITTED and x.began_at > t]

    # -- after it --------------------------------------------------------------------------------

    def txn_verdict(self, records: List[ConsumedRecord]) -> TxnVerdict:
        """``records``: the topic read back by a read_committed reader."""
        seqs = Counter(seq_of(r) for r in records)
        txn_of = {s: t for t in self.txns.values() for s in t.seqs}
        for r in records:  # the txn header agrees with the transaction that sent the record
            heads = [v for k, v in r.headers if k == "txn"]
            owner = txn_of.get(seq_of(r))
            assert owner is None or heads == [b"%d" % owner.k], (r, owner)
        lost = aborted_written = aborted_visible = half = unended_visible = 0
        for t in self.txns.values():
            seen = sum(1 for s in t.seqs if s in seqs)
            if 0 < seen < len(t.seqs):
                half += 1
            if t.outcome == COMMITTED:
                lost += len(t.seqs) - seen
            elif t.outcome == ABORTED:
                aborted_visible += seen
                aborted_written += sum(
                    1 for s in t.seqs if s in self.deliveries and self.deliveries[s].error is None
                )
            elif t.seqs and seen == len(t.seqs):
                unended_visible += 1
        order = out_of_order(records, seq_of)
        outcomes = Counter(t.outcome for t in self.txns.values())
        return TxnVerdict(
            transactions=len(self.txns),
            committed=outcomes[COMMITTED],
            aborted=outcomes[ABORTED],
            unended=outcomes[None],
            records_sent=len(self.sent_at),
            records_committed=sum(
                len(t.seqs) for t in self.txns.values() if t.outcome == COMMITTED
            ),
            visible=len(seqs),
            lost=lost,
            duplicated=sum(1 for n in seqs.values() if n > 1),
            reordered=len(order),
            aborted_written=aborted_written,
            aborted_visible=aborted_visible,
            half_visible=half,
            unended_visible=unended_visible,
            reordered_at=tuple(describe(o, seq_of) for o in order[:3]),
        )


class Fatal(Exception):
    """The load's client reported a fatal error: the load ends."""


class TxnLoad:
    """One client running transactions of numbered records against ``topic``."""

    client = ""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int = PARTITIONS,
        txn_records: int = TXN_RECORDS,
        txn_rate: float = TXN_RATE,
        abort_every: int = ABORT_EVERY,
        config: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.txn_records, self.txn_rate, self.abort_every = txn_records, txn_rate, abort_every
        self.config = dict(config or {})
        self.config.setdefault("transactional.id", f"txn-load-{uuid.uuid4().hex[:8]}")
        self.transactional_id = str(self.config["transactional.id"])
        self.result = TxnLoadResult(self.client)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.failure: Optional[BaseException] = None
        self._held: Optional[Txn] = None
        self._held_event = threading.Event()

    @property
    def pid(self) -> int:
        """The process whose sockets talk to the brokers."""
        return os.getpid()

    # -- control ----------------------------------------------------------------------------------

    def start(self, warm_up_timeout: float = 90.0) -> TxnLoad:
        """Starts the transactions and waits until one committed (init_transactions, the first
        AddPartitionsToTxn and EndTxn done, a JVM's JIT warm): faults start on a running load."""
        self._thread = threading.Thread(target=self._guarded, name=f"{self.client}-txn-load")
        self._thread.start()
        deadline = time.monotonic() + warm_up_timeout
        while not any(t.outcome == COMMITTED for t in self.result.ended_txns()):
            if self.failure is not None or not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"{self.client}: the load ended before a commit: {self.result}")
            if time.monotonic() > deadline:
                self.stop(60)
                raise TimeoutError(
                    f"{self.client}: no transaction committed in {warm_up_timeout} s: "
                    f"{list(self.result.txns.values())[:3]}"
                )
            time.sleep(0.05)
        return self

    def hold_next(self) -> None:
        """The next transaction stops between its last send and its commit, records flushed."""
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def wait_held(self, timeout: float) -> Txn:
        if not self._held_event.wait(timeout) or self._held is None:
            raise TimeoutError(f"{self.client}: no transaction held in {timeout} s")
        return self._held

    def wait_ended(self, txn: Txn, timeout: float) -> bool:
        """Until ``txn`` has an outcome, the load ended or ``timeout``: whether it has one."""
        deadline = time.monotonic() + timeout
        while txn.outcome is None and time.monotonic() < deadline:
            if self._thread is not None and not self._thread.is_alive():
                break
            time.sleep(0.02)
        return txn.outcome is not None

    def wait_committed_since(self, t: float, count: int, timeout: float) -> Optional[float]:
        """Until ``count`` transactions begun after ``t`` committed: when the last did (None:
        not in ``timeout`` s, or the load ended)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.result.committed_since(t)
            if len(done) >= count:
                return max(x.ended_at or 0.0 for x in done[:count])
            if self._thread is not None and not self._thread.is_alive():
                return None
            time.sleep(0.05)
        return None

    def stop(self, timeout: float = 2 * COMMIT_TIMEOUT_S * MAX_ATTEMPTS) -> TxnLoadResult:
        """Ends the load after the transaction under way (its outcome in)."""
        self._stop.set()
        self.release()
        assert self._thread is not None
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"{self.client}: a transaction still open after {timeout} s")
        self.result.finish()
        if self.failure is not None:
            raise self.failure
        return self.result

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc

    def _run(self) -> None:
        raise NotImplementedError

    def _paced(self) -> Iterator[int]:
        return paced(self._stop, self.txn_rate)


class _InProcessTxnLoad(TxnLoad):
    """The transaction loop of a Python client; ``_classify`` sorts its errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hold = threading.Event()
        self._release = threading.Event()

    def hold_next(self) -> None:
        self._release.clear()
        self._held_event.clear()
        self._held = None
        self._hold.set()

    def release(self) -> None:
        self._release.set()

    # the client's calls
    def _open(self) -> None:
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _send(self, seq: int, k: int) -> None:
        raise NotImplementedError

    def _flush(self) -> None:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _abort(self) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def _classify(self, exc: BaseException) -> str:
        """``"retry"`` (call again), ``"abort"`` or ``"fatal"``."""
        raise NotImplementedError

    def _run(self) -> None:
        result, seq = self.result, 0
        self._open()
        try:
            result.init_at = time.monotonic()
            for k in self._paced():
                self._begin()
                txn = Txn(k, seq, time.monotonic())
                with result.lock:
                    result.txns[k] = txn
                try:
                    for _ in range(self.txn_records):
                        result.sent_at[seq] = time.monotonic()
                        try:
                            self._send(seq, k)
                        except Exception as exc:  # noqa: BLE001 - the transaction's outcome
                            del result.sent_at[seq]
                            result.refused.append((seq, time.monotonic(), repr(exc)))
                            raise
                        txn.seqs.append(seq)
                        seq += 1
                    if self.abort_every and k % self.abort_every == self.abort_every - 1:
                        self._flush()
                        self._call(txn, self._abort, "abort")
                        result.ended(txn, ABORTED)
                        continue
                    if self._hold.is_set():
                        self._hold.clear()
                        self._flush()
                        txn.held_at = time.monotonic()
                        self._held = txn
                        self._held_event.set()
                        self._release.wait()
                    self._call(txn, self._commit, "commit")
                    result.ended(txn, COMMITTED)
                except Fatal:
                    break
                except Exception as exc:  # noqa: BLE001 - sorted by _classify
                    txn.errors.append(f"{type(exc).__name__}: {exc}")
                    if self._classify(exc) != "abort":
                        result.fatal = repr(exc)
                        break
                    try:
                        self._call(txn, self._abort, "abort")
                    except Fatal:
                        break
                    except Exception as abort_exc:  # noqa: BLE001 - the abort failed: fatal
                        txn.errors.append(f"abort: {type(abort_exc).__name__}: {abort_exc}")
                        result.fatal = repr(abort_exc)
                        break
                    result.ended(txn, ABORTED)
        finally:
            self._close()

    def _call(self, txn: Txn, call: Callable[[], None], what: str) -> None:
        """``call`` (commit or abort), called again after a retriable error up to
        ``MAX_ATTEMPTS`` times; a fatal error raises ``Fatal``."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                call()
                return
            except Exception as exc:  # noqa: BLE001 - sorted by _classify
                kind = self._classify(exc)
                if kind == "retry" and attempt < MAX_ATTEMPTS:
                    txn.errors.append(f"{what} retried: {type(exc).__name__}: {exc}")
                    continue
                if kind == "abort" and what == "commit":
                    raise
                txn.errors.append(f"{what}: {type(exc).__name__}: {exc}")
                self.result.fatal = repr(exc)
                raise Fatal(exc) from exc


class CproducerTxnLoad(_InProcessTxnLoad):
    client = "cproducer"

    def _open(self) -> None:
        from cproducer import KafkaProducer

        self.producer = KafkaProducer({"bootstrap.servers": self.bootstrap, **self.config})
        self.producer.init_transactions()

    def _begin(self) -> None:
        self.producer.begin_transaction()

    def _send(self, seq: int, k: int) -> None:
        self.producer.send(
            self.topic,
            b"value-%d" % seq,
            partition=seq % self.partitions,
            headers=[("seq", b"%d" % seq), ("txn", b"%d" % k)],
            callback=self._callback(seq),
        )

    def _callback(self, seq: int) -> Callable[[Any, Optional[BaseException]], None]:
        def done(md: Any, exc: Optional[BaseException]) -> None:
            now = time.monotonic()
            if exc is None:
                self.result.delivered(seq, Ack(now, md.partition, md.offset, None))
            else:
                self.result.delivered(seq, Ack(now, -1, -1, repr(exc)))

        return done

    def _flush(self) -> None:
        self.producer.flush()

    def _commit(self) -> None:
        self.producer.commit_transaction(COMMIT_TIMEOUT_S)

    def _abort(self) -> None:
        self.producer.abort_transaction(COMMIT_TIMEOUT_S)

    def _close(self) -> None:
        self.producer.close(30)

    def _classify(self, exc: BaseException) -> str:
        from cproducer import errors

        if isinstance(exc, errors.KafkaTimeoutError):
            return "retry"
        fatal = (
            errors.ProducerFencedError,
            errors.OutOfOrderSequenceNumberError,
            errors.AuthorizationError,
            errors.UnsupportedVersionError,
            errors.IllegalStateError,
        )
        if isinstance(exc, fatal) or not isinstance(exc, KafkaError):
            return "fatal"
        return "abort"


class LibrdkafkaTxnLoad(_InProcessTxnLoad):
    client = "librdkafka"

    def _open(self) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": self.bootstrap, **self.config})
        self._polling = threading.Event()

        def poll() -> None:
            while not self._polling.is_set():
                self.producer.poll(0.02)

        self._poller = threading.Thread(target=poll, name="librdkafka-txn-poll", daemon=True)
        self._poller.start()
        self.producer.init_transactions(COMMIT_TIMEOUT_S)

    def _begin(self) -> None:
        self.producer.begin_transaction()

    def _send(self, seq: int, k: int) -> None:
        while True:
            try:
                self.producer.produce(
                    self.topic,
                    b"value-%d" % seq,
                    partition=seq % self.partitions,
                    headers=[("seq", b"%d" % seq), ("txn", b"%d" % k)],
                    on_delivery=self._callback(seq),
                )
                return
            except BufferError:  # the queue is full: the poll thread drains it
                time.sleep(0.01)

    def _callback(self, seq: int) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            now = time.monotonic()
            if err is None:
                self.result.delivered(seq, Ack(now, msg.partition(), msg.offset(), None))
            else:
                self.result.delivered(seq, Ack(now, -1, -1, str(err)))

        return done

    def _flush(self) -> None:
        left = self.producer.flush(COMMIT_TIMEOUT_S)
        if left:
            raise TimeoutError(f"librdkafka: {left} records not delivered after flush")

    def _commit(self) -> None:
        self.producer.commit_transaction(COMMIT_TIMEOUT_S)

    def _abort(self) -> None:
        self.producer.abort_transaction(COMMIT_TIMEOUT_S)

    def _close(self) -> None:
        self._polling.set()
        self._poller.join(5)
        self.producer.flush(30)

    def _classify(self, exc: BaseException) -> str:
        from confluent_kafka import KafkaException

        if not isinstance(exc, KafkaException) or not exc.args:
            return "fatal"
        err = exc.args[0]
        if err.retriable():
            return "retry"
        if err.txn_requires_abort():
            return "abort"
        return "fatal"


class JavaTxnLoad(TxnLoad):
    """Java's KafkaProducer in a JVM (``tests/java/SeqTxnProducer.java``): the same loop, its
    events read from its output; ``hold_next``/``release`` are lines on its stdin."""

    client = "java"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._proc: Optional[subprocess.Popen] = None
        self._stdin_lock = threading.Lock()
        self._started = threading.Event()

    @property
    def pid(self) -> int:
        self._started.wait(60)
        assert self._proc is not None
        return self._proc.pid

    def hold_next(self) -> None:
        self._held_event.clear()
        self._held = None
        self._write("H")

    def release(self) -> None:
        self._write("R")

    def _write(self, line: str) -> None:
        self._started.wait(60)
        with self._stdin_lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdin.closed:
                return
            try:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def stop(self, timeout: float = 2 * COMMIT_TIMEOUT_S * MAX_ATTEMPTS) -> TxnLoadResult:
        self._stop.set()
        self._started.wait(60)
        with self._stdin_lock:
            if self._proc is not None and self._proc.stdin is not None:
                try:
                    self._proc.stdin.close()  # the JVM ends after the transaction under way
                except BrokenPipeError:
                    pass
        return super().stop(timeout)

    def _run(self) -> None:
        settings = [f"{k}={v}" for k, v in self.config.items()]
        try:
            proc, stderr, drain = start_java(
                "SeqTxnProducer",
                [self.bootstrap, self.topic, str(self.partitions), str(self.txn_records),
                 str(self.txn_rate), str(self.abort_every), *settings],
            )  # fmt: skip
            self._proc = proc
        finally:
            self._started.set()
        assert proc.stdout is not None
        result, done, current = self.result, False, None
        try:
            for line in proc.stdout:
                fields = line.rstrip("\n").split(" ", 3)
                kind = fields[0]
                if kind == "D":
                    done = True
                    continue
                if kind == "I":
                    result.init_at = int(fields[1]) / 1e9
                    continue
                n, at = int(fields[1]), int(fields[2]) / 1e9
                tail = " ".join(fields[3:])
                if kind == "B":
                    current = Txn(n, int(tail), at)
                    with result.lock:
                        result.txns[n] = current
                elif kind == "S":
                    result.sent_at[n] = at
                    assert current is not None
                    current.seqs.append(n)
                elif kind == "X":
                    result.refused.append((n, at, tail))
                elif kind == "A":
                    part, offset = tail.split(" ")
                    result.delivered(n, Ack(at, int(part), int(offset), None))
                elif kind == "E":
                    result.delivered(n, Ack(at, -1, -1, tail))
                else:
                    txn = result.txns[n]
                    if kind == "W":
                        txn.held_at = at
                        self._held = txn
                        self._held_event.set()
                    elif kind == "Q":
                        txn.errors.append(f"retried: {tail}")
                    elif kind == "N":
                        txn.errors.append(tail)
                    elif kind == "F":
                        txn.errors.append(tail)
                        result.fatal = tail
                    elif kind in ("C", "K"):
                        txn.ended_at = at
                        result.ended(txn, COMMITTED if kind == "C" else ABORTED)
        finally:
            proc.wait(60)
            drain.join(5)
        if not done or proc.returncode != 0:
            raise RuntimeError(
                f"SeqTxnProducer exited {proc.returncode}:\n{''.join(stderr)[-4000:]}"
            )


TXN_CLIENTS: Dict[str, Callable[..., TxnLoad]] = {
    "cproducer": CproducerTxnLoad,
    "librdkafka": LibrdkafkaTxnLoad,
    "java": JavaTxnLoad,
}


# -- the fault ----------------------------------------------------------------------------------


def coordinator_of(cluster: ApacheKafkaCluster, transactional_id: str, timeout: float) -> int:
    """The node id of ``transactional_id``'s transaction coordinator, by FindCoordinator (key
    type 1) to a running broker; asked again while it is being loaded or elected."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        for node in cluster.brokers:
            if not node.running:
                continue
            try:
                req = FindCoordinatorRequest(transactional_id, KEY_TYPE_TRANSACTION)
                resp = request(cluster.host, node.listeners["PLAINTEXT"], req, 3, 5.0)
            except (OSError, KafkaError) as exc:
                last = exc
                continue
            if resp.error_code == 0:
                return int(resp.node_id)
            last = resp
        time.sleep(0.1)
    raise TimeoutError(f"no coordinator for {transactional_id!r} in {timeout} s: {last}")


def session_timeout_s(cluster: ApacheKafkaCluster) -> float:
    """The controller's broker.session.timeout.ms: how long a killed broker stays the leader of
    its partitions (the __transaction_state one among them)."""
    controller = next(n for n in cluster.nodes.values() if "controller" in n.roles)
    return int(controller.properties.get("broker.session.timeout.ms", 9000)) / 1000


def _backlog(port: int, client_pid: int) -> int:
    """Bytes that process ``client_pid`` sent to the broker listening on ``port`` and that sit
    unread in the broker's socket buffers (a paused broker's requests), from /proc/net/tcp*."""
    inodes = set()
    for fd in os.listdir(f"/proc/{client_pid}/fd"):
        try:
            link = os.readlink(f"/proc/{client_pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    entries = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                cols = line.split()
                local, remote = (int(a.rsplit(":", 1)[1], 16) for a in cols[1:3])
                entries.append((local, remote, int(cols[4].split(":")[1], 16), int(cols[9])))
    client_ports = {lp for lp, rp, _, inode in entries if rp == port and inode in inodes}
    return sum(rx for lp, rp, rx, _ in entries if lp == port and rp in client_ports)


def _coordinator_fails(
    cluster: ApacheKafkaCluster, load: TxnLoad, mid_commit: bool
) -> Dict[str, Any]:
    session = session_timeout_s(cluster)
    # a commit may take a session timeout, the new coordinator's load, and the client's own
    # rediscovery; the client's retries are bounded by its commit timeout, MAX_ATTEMPTS times
    outcome_timeout = session + COMMIT_TIMEOUT_S * MAX_ATTEMPTS
    time.sleep(1.0)  # a few transactions before the fault
    attempts = MID_COMMIT_ATTEMPTS if mid_commit else 1
    for attempt in range(1, attempts + 1):
        load.hold_next()
        held = load.wait_held(COMMIT_TIMEOUT_S + 30)
        victim = coordinator_of(cluster, load.transactional_id, 30)
        node = cluster.nodes[victim]
        failed_at = time.monotonic()
        in_flight = None
        if not mid_commit:
            cluster.kill(victim)
            load.release()
            break
        # the coordinator stops answering with the client's connection open; the commit's
        # EndTxn goes out and waits in the broker's socket buffer; then the broker dies
        node.pause()
        load.release()
        # the EndTxn is there within a few ms when the client commits through this broker;
        # when it is not (the commit went elsewhere, seen now and then in a long run), the
        # broker is resumed before the controller fences it and the fault is set up again on
        # the next transaction: the measured run is one whose EndTxn the killed broker held
        wait_s = COMMIT_TIMEOUT_S if attempt == attempts else MID_COMMIT_WAIT_S
        deadline = time.monotonic() + wait_s
        in_flight = 0
        while not in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
            in_flight = _backlog(node.listeners["PLAINTEXT"], load.pid)
        if in_flight or attempt == attempts:
            cluster.kill(victim)
            break
        node.resume()
        load.wait_ended(held, outcome_timeout)
    killed_at = time.monotonic()
    ended = load.wait_ended(held, outcome_timeout)
    after = load.wait_committed_since(failed_at, 3, outcome_timeout)
    new_coordinator = coordinator_of(cluster, load.transactional_id, 30) if ended else None
    # a broker's start takes ~10 s on a quiet machine, minutes on a crowded one
    cluster.start_node(victim, timeout=RESTART_TIMEOUT_S)
    restarted_at = time.monotonic()
    # transactions go on with the broker back (a follower of __transaction_state again)
    after_restart = load.wait_committed_since(restarted_at, 3, outcome_timeout)
    return {
        "victim": victim,
        "new_coordinator": new_coordinator,
        "held_txn": held.k,
        "held_outcome": held.outcome,
        "held_errors": list(held.errors),
        "stall_s": None if held.ended_at is None else held.ended_at - failed_at,
        "recovered_s": None if after is None else after - failed_at,
        "committed_after_restart": after_restart is not None,
        "killed_after_s": killed_at - failed_at,
        "in_flight_bytes": in_flight,
    }


def coordinator_killed(
    cluster: ApacheKafkaCluster, load: TxnLoad, topic: Optional[str] = None
) -> Dict[str, Any]:
    """kill -9 of the transaction coordinator's broker between a transaction's last send (its
    records written to their partitions) and its commit; the broker started again once later
    transactions committed.

    The commit's EndTxn finds no coordinator until the controller fences the dead broker
    (broker.session.timeout.ms) and another broker, elected leader of the transaction's
    __transaction_state partition, has loaded its state; the commit then completes (or raises an
    abortable error, and the transaction is aborted). ``stall_s``: the kill to the held
    transaction's outcome; ``recovered_s``: the kill to the commit of the first transaction begun
    after it."""
    return _coordinator_fails(cluster, load, mid_commit=False)


def coordinator_killed_mid_commit(
    cluster: ApacheKafkaCluster, load: TxnLoad, topic: Optional[str] = None
) -> Dict[str, Any]:
    """The coordinator's broker paused (SIGSTOP) before the commit, killed (SIGKILL) once the
    commit's request sits unread in its socket buffer: the EndTxn in flight is lost with the
    connection.

    The client learns it from the reset connection (not from an answer), looks the coordinator
    up again and sends EndTxn again; the new coordinator, with the transaction still ongoing in
    its state, commits it. ``in_flight_bytes``: what the client had sent the paused broker when
    it was killed (0: the commit never got its request out, as in ``txn-coordinator-killed``);
    ``stall_s`` from the pause (the coordinator's failure, its heartbeats stopped too)."""
    return _coordinator_fails(cluster, load, mid_commit=True)


TXN_FAULTS: Dict[str, Callable[..., Dict[str, Any]]] = {
    FAULT: coordinator_killed,
    FAULT_MID_COMMIT: coordinator_killed_mid_commit,
}


def run_txn_fault(
    cluster: ApacheKafkaCluster,
    client: str = "cproducer",
    config: Optional[Mapping[str, Any]] = None,
    name: str = FAULT,
) -> FaultRun:
    """One transactional fault, one client: the topic, the load, the fault, both read_committed
    read-backs. ``config``: producer settings, Java's names (translated for librdkafka).
    ``measured`` holds the fault's figures and each reader's ``TxnVerdict`` (``txn_verdict``,
    ``java_txn_verdict``)."""
    started = time.monotonic()
    topic = topic_name(name)
    cluster.create_topic(topic, PARTITIONS)
    settings = client_config(client, config or {})
    load = TXN_CLIENTS[client](cluster.bootstrap_servers, topic, config=settings)
    load.start()
    try:
        measured = TXN_FAULTS[name](cluster, load)
    finally:
        result = load.stop()
    committed = sum(len(t.seqs) for t in result.txns.values() if t.outcome == COMMITTED)
    by_rdkafka = read_back(
        cluster.bootstrap_servers, topic, PARTITIONS, committed, 90, 1.0, READ_COMMITTED
    )
    by_java = read_back_java(
        cluster.bootstrap_servers, topic, PARTITIONS, committed, 90, READ_COMMITTED
    )
    measured["txn_verdict"] = result.txn_verdict(by_rdkafka)
    measured["java_txn_verdict"] = result.txn_verdict(by_java)
    measured["transactional_id"] = load.transactional_id
    return FaultRun(
        name,
        client,
        result,
        result.verdict(by_rdkafka, PARTITIONS),
        result.verdict(by_java, PARTITIONS),
        measured,
        time.monotonic() - started,
    )


TXN_TABLE_HEAD = (
    f"{'fault':<34}{'client':<12}{'txns':>6}{'commit':>7}{'abort':>6}{'sent':>7}{'visible':>8}"
    f"{'lost':>5}{'dup':>5}{'reord':>6}{'half':>5}{'ab.vis':>7}{'stall s':>9}"
)


def txn_table_row(run: FaultRun) -> str:
    """One run, the larger count of the two readers where they could differ."""
    v: TxnVerdict = run.measured["txn_verdict"]
    j: TxnVerdict = run.measured["java_txn_verdict"]
    stall = "-" if run.stall_s is None else f"{run.stall_s:.2f}"
    return (
        f"{run.fault:<34}{run.client:<12}{v.transactions:>6}{v.committed:>7}{v.aborted:>6}"
        f"{v.records_sent:>7}{min(v.visible, j.visible):>8}{max(v.lost, j.lost):>5}"
        f"{max(v.duplicated, j.duplicated):>5}{max(v.reordered, j.reordered):>6}"
        f"{max(v.half_visible, j.half_visible):>5}"
        f"{max(v.aborted_visible, j.aborted_visible):>7}{stall:>9}"
    )


def format_txn_table(runs: List[FaultRun]) -> str:
    return "\n".join([TXN_TABLE_HEAD, *(txn_table_row(r) for r in runs)])


def _register() -> None:
    """Both faults in ``cluster_faults.FAULTS``, with their runner and cluster settings."""
    for name, action in TXN_FAULTS.items():
        doc = (action.__doc__ or "").strip().split("\n\n")[0]
        FAULTS[name] = Fault(
            name,
            action,
            PARTITIONS,
            TXN_RATE * TXN_RECORDS,
            {},
            False,
            " ".join(doc.split()),
            cluster_properties=CLUSTER_PROPERTIES,
            runner=functools.partial(run_txn_fault, name=name),
        )


_register()
