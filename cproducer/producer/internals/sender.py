"""Sender: the background I/O thread (Java's ``producer.internals.Sender``).

One loop, ``run_once``: get a producer id if idempotence needs one → ``accumulator.ready`` → make
sure each ready node has a connection → ``accumulator.drain`` up to ``max.request.size`` per node →
expire batches past ``delivery.timeout.ms`` → one Produce request per node → ``client.poll``.
Produce responses complete batches (base offset, log-append time) or retry them with backoff,
split them (MESSAGE_TOO_LARGE) or fail them. Per-request work is plain Python; per-record work
stays in the accumulator's Cython code.

Two times: requests, connections and the transactional backoff run on the clock's monotonic ms
(``now``); the accumulator's batches on ``batch_time_ms`` (``batch_now``), the time the producer's
send paths append with (see ``KafkaProducer``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from cproducer import errors
from cproducer.cluster import TopicPartition
from cproducer.network.network_client import NO_DELAY_LIMIT_MS, ClientRequest, ClientResponse
from cproducer.producer.internals.sender_interfaces import (
    Accumulator,
    KafkaClient,
    Metadata,
    Transactions,
)
from cproducer.producer.internals.sender_metrics import SenderMetrics
from cproducer.producer.internals.transaction_manager import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    remove_batch,
)
from cproducer.producer.internals.txn_request_handlers import TxnRequestHandler
from cproducer.protocol import ProduceRequest
from cproducer.protocol.produce import (
    LAST_VERSION_BEFORE_TRANSACTION_V2 as PRODUCE_LAST_VERSION_BEFORE_TRANSACTION_V2,
)
from cproducer.utils.time import SYSTEM_CLOCK, Clock

log = logging.getLogger("cproducer.producer.internals.sender")

# a Produce answer with one of these may name the partition's new leader (KIP-951)
_LEADER_MOVED = (errors.NotLeaderOrFollowerError, errors.FencedLeaderEpochError)

# Java's message for the records of a batch with record errors that had none themselves
OTHER_RECORDS_FAILED = (
    "Failed to append record because it was part of a batch which had one or more invalid records"
)


def record_exceptions_for(
    batch_error: BaseException, part: Any
) -> Optional[Callable[[int], BaseException]]:
    """Each record's error when the broker refused a batch naming the records at fault (KIP-467:
    ``part.record_errors``, (batch index, message) pairs), as Java's Sender.failBatch: one record
    at fault gets the partition's error code with its own message (INVALID_RECORD's
    InvalidRecordError for a null key in a compacted topic, InvalidTimestampError for a
    timestamp out of range), several each get InvalidRecordError (one partition-level code
    cannot tell their causes apart) and the batch's other records a plain KafkaError: they were
    refused with the batch, through no fault of their own. Each has ``batch_error`` (the
    partition's error, with the broker's message) as its ``__cause__``. None without record
    errors (every record gets ``batch_error``)."""
    if not part.record_errors:
        return None
    cls = errors.for_code(part.error_code) if len(part.record_errors) == 1 else None
    at_fault: Dict[int, BaseException] = {}
    for index, message in part.record_errors:
        if message is None:
            message = part.error_message
        if message is None:
            message = errors.for_code(part.error_code).description
        exc = cls(message) if cls is not None else errors.InvalidRecordError(message)
        exc.__cause__ = batch_error
        at_fault[index] = exc
    innocent = errors.KafkaError(OTHER_RECORDS_FAILED)
    innocent.__cause__ = batch_error

    def for_record(index: int) -> BaseException:
        return at_fault.get(index, innocent)

    return for_record


class Sender:
    def __init__(
        self,
        client: KafkaClient,
        metadata: Metadata,
        accumulator: Accumulator,
        *,
        guarantee_message_order: bool,
        max_request_size: int,
        acks: int,
        retries: int,
        request_timeout_ms: int,
        delivery_timeout_ms: int,
        transaction_manager: Optional[Transactions] = None,
        client_id: str = "",
        clock: Clock = SYSTEM_CLOCK,
        batch_time_ms: Optional[Callable[[], int]] = None,
        metrics: Optional[SenderMetrics] = None,
    ) -> None:
        self.client = client
        self._mute_data_wakeups: Optional[Callable[[Sequence[Any]], None]] = None
        if client is not None:
            # called per record whenever a batch fills or is made: the client's wake-up flags'
            # C method (NetworkClient's SelectorWakeup), else its own bound method, instead of
            # wakeup() below calling it (no Python frame, and no method lookup on the client,
            # which CPython 3.11 does not specialize on an instance whose __dict__ outgrew the
            # shared keys, as NetworkClient's has)
            waker = getattr(client, "waker", None)
            self.wakeup = (  # type: ignore[method-assign]
                waker.wakeup if waker is not None else client.wakeup
            )
            # an append's wake-up, none while every connection is at its in-flight limit
            self.wakeup_for_data = (  # type: ignore[method-assign]
                waker.wakeup_for_data if waker is not None else self.wakeup
            )
            self._mute_data_wakeups = getattr(client, "mute_data_wakeups", None)
        self.metadata = metadata
        self.accumulator = accumulator
        self.guarantee_message_order = guarantee_message_order
        self.max_request_size = max_request_size
        self.acks = acks
        self.retries = retries
        self.request_timeout_ms = request_timeout_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.transaction_manager = transaction_manager
        self.clock = clock
        self._now = clock.monotonic_ms
        self._batch_now = batch_time_ms if batch_time_ms is not None else clock.milliseconds
        self.metrics = metrics if metrics is not None else SenderMetrics()
        # partitions moved to a leader a Produce answer named (KIP-951), for tests
        self.leader_hints_applied = 0
        # Java's inFlightBatches: batches drained and sent, by partition (for delivery timeouts)
        self.in_flight_batches: Dict[TopicPartition, List[Any]] = {}
        # when the oldest of them reaches delivery.timeout.ms (batch time; None: none in flight)
        self._next_in_flight_expiry_ms: Optional[int] = None
        # one transactional request (or an idempotent producer's InitProducerId) at a time
        self._txn_request_in_flight = False
        # ms until the node a transactional request waits for can take it, when no I/O will
        # announce that (its quota's throttle time, KIP-219); NO_DELAY_LIMIT_MS otherwise
        self._txn_node_delay = NO_DELAY_LIMIT_MS
        # the same manager when transactional.id is set, else None (an idempotent producer)
        self._txn = (
            transaction_manager
            if transaction_manager is not None and transaction_manager.transactional_id is not None
            else None
        )
        self._transactional_id = self._txn.transactional_id if self._txn is not None else None
        if self._txn is not None:
            # the transactions version comes from the brokers' finalized features (KIP-890)
            self._txn.finalized_features = getattr(client, "finalized_features", None)
        self.running = True
        self.force_close = False
        self.thread = threading.Thread(
            target=self.run, name=f"kafka-producer-network-thread | {client_id}", daemon=True
        )

    # ------------------------------------------------------------------ thread
    def start(self) -> None:
        self.thread.start()

    def wakeup(self) -> None:
        self.client.wakeup()

    def wakeup_for_data(self) -> None:
        """New records to send (a batch filled or made): ``wakeup`` (with a client whose
        wake-up flags can be muted, ``__init__`` puts their own method here instead)."""
        self.wakeup()

    def initiate_close(self) -> None:
        self.accumulator.close()
        self.running = False
        self.wakeup()

    def force_close_now(self) -> None:
        self.force_close = True
        self.initiate_close()

    def run(self) -> None:
        log.debug("starting the producer I/O thread")
        while self.running:
            self._run_once_safely()
        # graceful close: an open transaction is aborted (as Java's Sender does), then
        # everything that was accepted is sent
        txn = self._txn
        while txn is not None and not self.force_close and txn.has_ongoing_transaction():
            if not txn.is_completing():
                log.info("aborting the open transaction: the producer is closing")
                txn.begin_abort()
            self._run_once_safely()
        # graceful close: send everything that was accepted
        while not self.force_close and (
            self.accumulator.has_undrained()
            or self.client.in_flight_request_count() > 0
            or self._has_pending_in_flight()
        ):
            self._run_once_safely()
        if self.force_close:
            self._fail_in_flight(errors.ProducerClosedError("producer closed forcefully"))
            self.accumulator.abort_incomplete_batches(
                errors.ProducerClosedError("producer closed forcefully before the record was sent")
            )
        try:
            self.client.close()
        except Exception:  # pragma: no cover - closing sockets
            log.exception("error closing the network client")
        log.debug("producer I/O thread stopped")

    def _run_once_safely(self) -> None:
        try:
            self.run_once()
        except Exception:
            log.exception("uncaught error in the producer I/O thread")
            time.sleep(0.01)

    def _has_pending_in_flight(self) -> bool:
        return any(self.in_flight_batches.values())

    # ------------------------------------------------------------------ one iteration
    def run_once(self) -> None:
        tm = self.transaction_manager
        if tm is not None and tm.fatal_error is not None:
            self.accumulator.abort_undrained_batches(tm.fatal_error)
        now = self._now()
        self.metrics.sample_pool(now)
        self._txn_node_delay = NO_DELAY_LIMIT_MS
        if tm is not None and tm.has_unresolved_sequences():
            tm.maybe_resolve_sequences()
        if tm is not None and tm.needs_producer_id():
            self._maybe_init_producer_id(tm, now)
        txn = self._txn
        if txn is not None:
            self._maybe_send_transactional_request(txn, now)
        poll_timeout = self.send_producer_data(now)
        if self._txn_node_delay < poll_timeout:
            poll_timeout = self._txn_node_delay
        if txn is not None:
            if txn.retry_after_ms > now:
                poll_timeout = min(poll_timeout, txn.retry_after_ms - now)
            elif txn.pending_partitions and not self._txn_request_in_flight:
                poll_timeout = 0  # an AddPartitionsToTxn to send
        if txn is None and self._mute_data_wakeups is not None:
            # nothing new can go out before an answer comes when every broker's connection is
            # at its in-flight limit (one request at a time keeps order): new records need not
            # wake the poll (see SelectorWakeup); a transaction's new partitions still do
            self._mute_data_wakeups(self.metadata.fetch().nodes)
        self.client.poll(poll_timeout, self._now())
        for _node, exc in self.client.take_authentication_failures():
            self._authentication_failed(exc)

    def _authentication_failed(self, exc: BaseException) -> None:
        """A refused login is not retried into the delivery timeout: every record waiting in
        a queue fails with it now, also batches back for a retry (send() raises it while it
        waits for metadata). Batches in flight on other connections complete as they will."""
        retried = self.accumulator.abort_queued_batches(exc)
        for batch in retried:
            self._fail_batch(batch, exc, False)
        if self.transaction_manager is not None:
            self.transaction_manager.authentication_failed(exc, bool(retried))

    # ------------------------------------------------------------------ transactions
    def _maybe_init_producer_id(self, tm: Transactions, now: int) -> None:
        """An idempotent producer's InitProducerId, once nothing is in flight."""
        if self._txn_request_in_flight or now < tm.retry_after_ms:
            return
        if tm.reset_requested() and (
            self.client.in_flight_request_count() > 0 or self._has_pending_in_flight()
        ):
            return  # let every answer come back before the id changes
        self._send_transactional_request(tm, tm.idempotent_init_producer_id(), now)

    def _maybe_send_transactional_request(self, tm: Transactions, now: int) -> None:
        """Java's maybeSendAndPollTransactionalRequest: at most one transactional request at a
        time, the one the TransactionManager hands out."""
        if tm.state in (ABORTABLE_ERROR, ABORTING_TRANSACTION) and self.accumulator.has_undrained():
            cause = tm.last_error
            exc = errors.TransactionAbortedError(
                "the transaction is being aborted"
                + (f" after an error: {cause!r}" if cause is not None else "")
            )
            self.accumulator.abort_undrained_batches(exc)
        if self._txn_request_in_flight or now < tm.retry_after_ms:
            return
        handler = tm.next_transactional_request(self.accumulator.has_incomplete())
        if handler is not None:
            self._send_transactional_request(tm, handler, now)

    def _send_transactional_request(
        self, tm: Transactions, handler: TxnRequestHandler, now: int
    ) -> None:
        target = handler.destination()
        if target is None:  # any node will do (FindCoordinator, an idempotent InitProducerId)
            target = self.client.least_loaded_node(now, self.metadata.fetch().nodes)
            if target is None:
                self.metadata.request_update()
                return
        if not self.client.ready(target, now):
            handler.reenqueue()
            if self.client.connection_failed(target):
                handler.coordinator_lost()
            else:  # e.g. throttled: the poll wakes when the node can take it
                self._txn_node_delay = self.client.connection_delay(target, now)
            return
        version = handler.pick_version(
            self.client.api_version_for(target.id, handler.request_class)
        )
        try:
            request = handler.build_request(version)
        except errors.KafkaError as exc:  # the broker's versions cannot do it
            tm.transition_to_fatal_error(exc)
            return
        self._txn_request_in_flight = True
        log.debug("sending %r to node %s", handler, target.id)

        def on_response(response: ClientResponse) -> None:
            self._txn_request_in_flight = False
            try:
                handler.on_complete(response, self._now())
            finally:
                self.wakeup()

        self.client.send(self._client_request(target.id, request, version, now, on_response), now)

    def send_producer_data(self, now: int) -> int:
        batch_now = self._batch_now()
        cluster = self.metadata.fetch()
        result = self.accumulator.ready(cluster, batch_now)
        if result.unknown_leader_topics:
            for topic in result.unknown_leader_topics:
                self.metadata.add(topic, batch_now)
            self.metadata.request_update()

        ready_nodes = set(result.ready_nodes)
        not_ready_timeout = NO_DELAY_LIMIT_MS
        for node_id in list(ready_nodes):
            node = cluster.node_by_id(node_id)
            if node is None or not self.client.ready(node, now):
                ready_nodes.discard(node_id)
                self.accumulator.update_node_latency_stats(node_id, batch_now, False)
                if node is not None:
                    not_ready_timeout = min(
                        not_ready_timeout, self.client.connection_delay(node, now)
                    )
            else:
                self.accumulator.update_node_latency_stats(node_id, batch_now, True)

        batches = self.accumulator.drain(cluster, ready_nodes, self.max_request_size, batch_now)
        for node_batches in batches.values():
            for batch in node_batches:
                self.in_flight_batches.setdefault(batch.topic_partition, []).append(batch)
                if self.guarantee_message_order:
                    self.accumulator.mute_partition(batch.topic_partition)

        expired = self._expired_in_flight_batches(batch_now)
        expired += self.accumulator.expired_batches(batch_now)
        for batch in expired:
            msg = (
                f"Expiring {batch.record_count} record(s) for {batch.topic_partition}: "
                f"{batch_now - batch.created_ms} ms has passed since batch creation "
                f"(delivery.timeout.ms={self.delivery_timeout_ms})"
            )
            self._fail_batch(batch, errors.KafkaTimeoutError(msg), adjust_sequences=False)
            if self.transaction_manager is not None and batch.retry:
                # Java's inRetry(): it was sent, and may be in the log
                self.transaction_manager.mark_sequence_unresolved(batch)
        if expired:
            # a batch drained above (a retry) can be past delivery.timeout.ms too: it has just
            # failed and given its memory back, so it stays out of the request
            batches = {node: [b for b in bs if not b.is_done] for node, bs in batches.items()}

        poll_timeout = min(result.next_ready_check_delay_ms, not_ready_timeout)
        if self._next_in_flight_expiry_ms is not None:
            # Java's nextExpiryTimeMs: awake when the oldest batch in flight reaches
            # delivery.timeout.ms, to expire it then rather than at its (late) answer
            poll_timeout = min(poll_timeout, self._next_in_flight_expiry_ms - batch_now)
        if ready_nodes and any(batches.values()):
            # more may be ready at once. Not when nothing was drained: a ready partition that
            # may not be drained now (waiting to join the transaction, or for its batch in
            # flight) waits for an answer, and the answer wakes the poll
            poll_timeout = 0
        poll_timeout = max(0, min(poll_timeout, 1000))
        for node_id, node_batches in batches.items():
            if node_batches:
                self._send_produce_request(node_id, node_batches, now)
        return poll_timeout

    def _expired_in_flight_batches(self, now: int) -> List[Any]:
        """Java's getExpiredInflightBatches: per partition, the sent batches in send order up to
        the first one still within delivery.timeout.ms (the later ones are younger)."""
        out = []
        emptied = []
        next_expiry: Optional[int] = None
        for tp, batches in self.in_flight_batches.items():
            while batches and batches[0].has_reached_delivery_timeout(
                self.delivery_timeout_ms, now
            ):
                batch = batches.pop(0)
                if self.guarantee_message_order:
                    self.accumulator.unmute_partition(tp)
                if not batch.is_done:  # completed meanwhile: nothing to fail
                    out.append(batch)
            if not batches:
                emptied.append(tp)
            else:  # Java's maybeUpdateNextBatchExpiryTime, for the first one kept
                expiry = batches[0].created_ms + self.delivery_timeout_ms
                if next_expiry is None or expiry < next_expiry:
                    next_expiry = expiry
        self._next_in_flight_expiry_ms = next_expiry
        for tp in emptied:
            del self.in_flight_batches[tp]
        return out

    def _remove_in_flight(self, batch: Any) -> None:
        batches = self.in_flight_batches.get(batch.topic_partition)
        if batches is not None:
            remove_batch(batches, batch)
            if not batches:
                del self.in_flight_batches[batch.topic_partition]

    def _fail_in_flight(self, exc: BaseException) -> None:
        for batches in list(self.in_flight_batches.values()):
            for batch in list(batches):
                self._fail_batch(batch, exc, adjust_sequences=False)
        self.in_flight_batches.clear()

    # ------------------------------------------------------------------ produce requests
    def _client_request(
        self, node_id: int, request: Any, version: int, now: int, callback: Callable[[Any], None]
    ) -> ClientRequest:
        return ClientRequest(
            node_id=node_id,
            request=request,
            api_version=version,
            created_ms=now,
            callback=callback,
            request_timeout_ms=self.request_timeout_ms,
            expect_response=request.expect_response(),
        )

    def _send_produce_request(self, node_id: int, batches: List[Any], now: int) -> None:
        topic_data: Dict[str, List[Any]] = {}
        by_tp: Dict[TopicPartition, Any] = {}
        for batch in batches:
            # the batch's own topic and partition (C attributes), not the tuple's fields
            topic_data.setdefault(batch.topic, []).append((batch.partition, batch.buffer()))
            by_tp[batch.topic_partition] = batch
        request = ProduceRequest(
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=topic_data,
            transactional_id=self._transactional_id,
        )
        version = self.client.api_version_for(node_id, ProduceRequest)
        if (
            version > PRODUCE_LAST_VERSION_BEFORE_TRANSACTION_V2
            and self._txn is not None
            and not self._txn.is_transaction_v2_enabled()
        ):
            # Produce v12 in a transaction means "add the partition yourself" (transactions
            # version 2): on version 1, AddPartitionsToTxn did, and v11 is the limit (Java's)
            version = PRODUCE_LAST_VERSION_BEFORE_TRANSACTION_V2
        self.metrics.update_produce_request_metrics(batches, now)

        def on_response(response: Any) -> None:
            self._handle_produce_response(response, by_tp, now)

        self.client.send(self._client_request(node_id, request, version, now, on_response), now)

    def _handle_produce_response(
        self, response: Any, batches: Dict[TopicPartition, Any], sent_ms: int
    ) -> None:
        now = self._now()
        batch_now = self._batch_now()
        if response.disconnected or response.timed_out or response.error is not None:
            why = "timed out" if response.timed_out else "disconnected"
            exc = response.error or errors.NetworkError(
                f"the connection to node {response.destination} {why} before the answer arrived"
            )
            if not isinstance(exc, errors.KafkaError):
                exc = errors.NetworkError(str(exc))
            for batch in batches.values():
                self._complete_batch_with_error(batch, exc, -1, batch_now)
            return
        body = response.response
        if body is None:
            # acks=0: nothing comes back; the batch is done once it was written
            for batch in batches.values():
                self._complete_batch(batch, -1, -1)
            return
        # Java's: the latency and throttle time of the Produce requests that were answered
        self.metrics.record_produce_response(
            response.destination, now - sent_ms, body.throttle_time_ms, now
        )
        new_leaders: Dict[TopicPartition, Any] = {}
        responses = body.responses
        # the batches the broker wrote, completed together after the loop
        written: List[Any] = []
        offsets: List[int] = []
        append_times: List[int] = []
        for tp, batch in batches.items():
            # a TopicPartition is the (topic, partition) tuple the answer is keyed by: no tuple
            # is built per batch
            part = responses.get(tp)
            if part is None:
                exc = errors.IllegalStateError(f"the Produce response has no entry for {tp}")
                self._fail_batch(batch, exc, adjust_sequences=False)
                continue
            err = (
                None
                if part.error_code == 0
                else errors.exception_for(part.error_code, part.error_message)
            )
            if err is None:
                written.append(batch)
                offsets.append(part.base_offset)
                append_times.append(part.log_append_time_ms)
                continue
            self._complete_batch_with_error(batch, err, part.log_start_offset, batch_now, part)
            leader = part.current_leader
            if (
                isinstance(err, _LEADER_MOVED)
                and leader is not None
                and leader[0] != -1
                and leader[1] != -1
            ):
                new_leaders[tp] = leader
        if new_leaders:
            # KIP-951 (Produce v10+): the answer names the new leaders; the batches just put
            # back go there at once (their partitions' leader epochs rose), without waiting for
            # the metadata update that was requested too, as Java does
            moved = self.metadata.update_partition_leadership(new_leaders, body.node_endpoints)
            self.leader_hints_applied += len(moved)
        if written:
            self._complete_batches(written, offsets, append_times)

    def _complete_batches(
        self, written: List[Any], base_offsets: List[int], log_append_times: List[int]
    ) -> None:
        """``_complete_batch`` for the batches of one Produce answer that the broker wrote: the
        transaction manager takes them under one lock, then each batch completes (its callbacks
        run) and gives its memory back."""
        # _remove_in_flight inlined: one answer holds a batch per partition, ~1,000 at 1,000
        # partitions, and a Python call each cost more than the removal
        in_flight = self.in_flight_batches
        for batch in written:
            tp = batch.topic_partition
            batches = in_flight.get(tp)
            if batches is not None:
                if batches and batches[0] is batch:
                    del batches[0]  # answers come in send order: nearly always the first
                else:
                    remove_batch(batches, batch)
                if not batches:
                    del in_flight[tp]
        tm = self.transaction_manager
        if tm is not None:
            tm.handle_completed_batches(written, base_offsets)
        accumulator = self.accumulator
        ordered = self.guarantee_message_order
        for batch, base_offset, log_append_time in zip(written, base_offsets, log_append_times):
            if batch.complete(base_offset, log_append_time):
                accumulator.deallocate(batch)
            if ordered:
                accumulator.unmute_partition(batch.topic_partition)

    def _complete_batch_with_error(
        self,
        batch: Any,
        err: BaseException,
        log_start_offset: int,
        batch_now: int,
        part: Any = None,
    ) -> None:
        tp = batch.topic_partition
        tm = self.transaction_manager
        if (
            isinstance(err, errors.MessageSizeTooLargeError)
            and batch.record_count > 1
            and not batch.is_done
        ):
            log.info(
                "splitting a batch of %d records for %s (MESSAGE_TOO_LARGE)", batch.record_count, tp
            )
            self._remove_in_flight(batch)
            if tm is not None:
                tm.handle_failed_batch(batch, err, adjust_sequences=False)
            self.accumulator.split_and_reenqueue(batch)
            self.metrics.record_batch_split(self._now())
            self.accumulator.deallocate(batch)
            if self.guarantee_message_order:
                self.accumulator.unmute_partition(tp)
            return
        if self._can_retry(batch, err, log_start_offset, batch_now):
            log.debug("retrying a batch for %s (attempt %d): %s", tp, batch.attempts + 1, err)
            self.metrics.record_retries(tp.topic, batch.record_count, self._now())
            self._remove_in_flight(batch)
            self.accumulator.reenqueue(batch, batch_now)
            if self.guarantee_message_order:
                self.accumulator.unmute_partition(tp)
        elif isinstance(err, errors.DuplicateSequenceNumberError):
            # the broker already has this batch: success (its offset is not known here)
            log.debug(
                "%s: the broker already has the batch at sequence %d (%d records, attempt %d): "
                "completed without offset",
                tp,
                batch.base_sequence,
                batch.record_count,
                batch.attempts + 1,
            )
            self._complete_batch(batch, -1, -1)
        else:
            if tm is not None:
                err = tm.failure_for(batch, err)
            self._fail_batch(
                batch,
                err,
                adjust_sequences=batch.attempts < self.retries,
                record_exceptions=None if part is None else record_exceptions_for(err, part),
            )
        if getattr(err, "invalid_metadata", False):
            self.metadata.request_update()

    def _can_retry(
        self, batch: Any, err: BaseException, log_start_offset: int, batch_now: int
    ) -> bool:
        if batch.has_reached_delivery_timeout(self.delivery_timeout_ms, batch_now):
            return False
        if batch.attempts >= self.retries or batch.is_done:
            return False
        if self.transaction_manager is not None:
            return bool(self.transaction_manager.can_retry(err, batch, log_start_offset))
        return bool(getattr(err, "retriable", False))

    def _complete_batch(self, batch: Any, base_offset: int, log_append_time: int) -> None:
        self._complete_batches([batch], [base_offset], [log_append_time])

    def _fail_batch(
        self,
        batch: Any,
        exc: BaseException,
        adjust_sequences: bool,
        record_exceptions: Optional[Callable[[int], BaseException]] = None,
    ) -> None:
        self._remove_in_flight(batch)
        if self.transaction_manager is not None:
            self.transaction_manager.handle_failed_batch(batch, exc, adjust_sequences)
        self.metrics.record_errors(batch.topic_partition.topic, batch.record_count, self._now())
        if batch.complete_exceptionally(exc, record_exceptions):
            self.accumulator.deallocate(batch)
        if self.guarantee_message_order:
            self.accumulator.unmute_partition(batch.topic_partition)
