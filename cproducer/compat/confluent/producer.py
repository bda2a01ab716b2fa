"""confluent-kafka's ``Producer`` over cproducer's ``KafkaProducer``.

Switch the import and keep the code::

    from cproducer.compat.confluent import Producer, KafkaError, KafkaException

    p = Producer({"bootstrap.servers": "localhost:9092"})
    p.produce("events", b"value", key="k", on_delivery=lambda err, msg: ...)
    p.poll(0)
    p.flush()

What it keeps from librdkafka: the configuration (``config.py``), the defaults, where each key
goes (``partitioners.pyx``), the error codes (``error.py``), and the delivery-report model: a
message's ``on_delivery(err, msg)`` runs in the thread that calls ``poll()``/``flush()`` (or a
transaction call), never on the I/O thread; ``len(producer)`` counts the messages produced and not
yet reported, and ``produce()`` raises ``BufferError`` when ``queue.buffering.max.messages`` or
``queue.buffering.max.kbytes`` would be exceeded. ``produce()`` itself is ``ProducePath.produce``
(Cython), bound to the instance.

What differs (documented in the README): messages waiting for their topic's metadata are sent by
the next ``produce()``/``poll()``/``flush()`` (librdkafka's own thread sends them), or by
``commit_transaction()`` before it commits (``abort_transaction()`` purges them); ``poll()``
counts one event per message (librdkafka one per batch of reports); ``len()`` counts messages
only (librdkafka adds its queued protocol requests).
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from cproducer import KafkaProducer, errors
from cproducer.compat.confluent.cluster_metadata import ClusterMetadata, cluster_metadata
from cproducer.compat.confluent.config import FacadeConfig, merged, translate
from cproducer.compat.confluent.error import (
    ALL_BROKERS_DOWN,
    INCONSISTENT,
    INVALID_ARG,
    NOT_CONFIGURED,
    PURGE_INFLIGHT,
    PURGE_QUEUE,
    TIMED_OUT,
    TRANSPORT,
    KafkaError,
    KafkaException,
    PurgedError,
    api_error,
)
from cproducer.compat.confluent.group_metadata import read_group_metadata
from cproducer.compat.confluent.message import DeliveryReports, purge_in_flight
from cproducer.compat.confluent.produce_path import ProducePath
from cproducer.compat.confluent.statistics import Statistics

if TYPE_CHECKING:
    from cproducer.compat.confluent.message import Message

#: confluent-kafka's types of produce()'s arguments (its _types.py)
HeadersType = Union[Dict[str, Union[str, bytes, None]], List[Tuple[str, Union[str, bytes, None]]]]
#: ``on_delivery(err, msg)``: err is None on success
DeliveryCallback = Callable[[Optional[KafkaError], "Message"], None]

_instances = itertools.count(1)

#: how often poll()/flush() look for metadata while messages wait for their topic's
_WAITING_POLL_S = 0.01
#: confluent-kafka's "no timeout" (-1) as a bound threading can wait for
_FOREVER_S = 10.0 * 365 * 24 * 3600


def _timeout_s(timeout: Optional[float]) -> float:
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
        raise TypeError(
            f"timeout must be a number of seconds (-1: none), not {type(timeout).__name__}"
        )
    if timeout is None or timeout < 0:
        return _FOREVER_S
    return float(timeout)


class Producer:
    """confluent-kafka's asynchronous ``Producer``: ``Producer(config_dict, **more_config)``."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, /, **kwargs: Any) -> None:
        cfg: FacadeConfig = translate(merged(config, kwargs))
        self._config = cfg
        producer_conf = dict(cfg.producer)
        # The I/O thread may fail its first connection before _Events filters that thread's
        # records (below): until then, drop the engine's line from the threads of that name.
        starting = _StartingFilter(f"{_IO_THREAD_NAME}{cfg.producer['client.id']}")
        logging.getLogger(_NETWORK_LOGGER).addFilter(starting)
        try:
            self._start(cfg, producer_conf)
        finally:
            logging.getLogger(_NETWORK_LOGGER).removeFilter(starting)

    def _start(self, cfg: FacadeConfig, producer_conf: Dict[str, Any]) -> None:
        try:
            self._kp = KafkaProducer(producer_conf)
        except errors.ConfigError as exc:
            raise KafkaException(
                KafkaError(INVALID_ARG, f"Failed to create producer: {exc}")
            ) from None
        self._engine = self._kp.engine
        tm = self._engine.transaction_manager
        if tm is not None:
            tm.invalid_epoch_is_fenced = True  # librdkafka's: a fenced Produce is fatal
        self._reports = DeliveryReports()
        self._reports.only_errors = cfg.dr_only_error
        self._path = ProducePath(
            self._engine.send,
            self._engine.check_can_send,
            self._engine.metadata,
            self._engine.wakeup,
            self._engine.batch_time_ms,
            self._reports,
            cfg.partitioner,
            cfg.sticky_linger_ms,
            cfg.max_messages,
            cfg.max_bytes,
            cfg.producer["delivery.timeout.ms"],
            cfg.on_delivery,
        )
        # the instance attributes win over the methods below: produce() goes straight to Cython
        self.produce = self._path.produce  # type: ignore[method-assign]
        self.produce_batch = self._path.produce_batch  # type: ignore[method-assign]
        self._closed = False
        self._name = f"{cfg.producer['client.id']}#producer-{next(_instances)}"
        self._stats: Optional[Statistics] = None
        if cfg.stats_cb is not None and cfg.stats_interval_ms > 0:
            self._stats = Statistics(self, cfg)
        self._events = _Events(self, cfg)
        self._path.poll_slow = self._poll
        self._path.quick_poll = self._stats is None
        self.poll = self._path.poll  # type: ignore[method-assign, assignment]

    # ------------------------------------------------------------------ produce
    def produce(
        self,
        topic: str,
        value: Optional[Union[str, bytes]] = None,
        key: Optional[Union[str, bytes]] = None,
        partition: int = -1,
        callback: Optional[DeliveryCallback] = None,
        on_delivery: Optional[DeliveryCallback] = None,
        timestamp: int = 0,
        headers: Optional[HeadersType] = None,
    ) -> None:
        """Queue one message; ``on_delivery(err, msg)`` runs from a later poll()/flush().

        ``value``/``key``: str (sent as UTF-8), bytes or None. ``partition``: -1 lets the
        configured partitioner choose. ``timestamp``: ms since the epoch (0: now). ``headers``:
        a list of (str, bytes/str/None) tuples or a dict. Raises ``BufferError`` when the queue is
        full (poll() and retry), ``KafkaException`` for a message that cannot be produced
        (``MSG_SIZE_TOO_LARGE``, ``_UNKNOWN_PARTITION``, ``_STATE`` outside a transaction)."""
        self._path.produce(topic, value, key, partition, callback, on_delivery, timestamp, headers)

    def produce_batch(
        self,
        topic: str,
        messages: List[Dict[str, Any]],
        partition: int = -1,
        callback: Optional[DeliveryCallback] = None,
        on_delivery: Optional[DeliveryCallback] = None,
    ) -> int:
        """Queue many messages (dicts with ``value``, ``key``, ``partition``, ``timestamp``,
        ``headers``, ``callback``); returns how many were queued, the others get ``_error``."""
        return int(self._path.produce_batch(topic, messages, partition, callback, on_delivery))

    # ------------------------------------------------------------------ events
    def poll(self, timeout: Optional[float] = -1) -> int:
        """Serve delivery reports and other callbacks; wait up to ``timeout`` s (-1: until one
        arrives) when none is ready. Returns how many events were served."""
        return self._path.poll(-1.0 if timeout is None else timeout)

    def _poll(self, timeout: float) -> int:
        self._check_open()
        served = self._serve()
        if served or timeout == 0:
            return served
        deadline = time.monotonic() + _timeout_s(timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._serve()
            self._reports.wait(self._until_next_event(remaining))
            served = self._serve()
            if served:
                return served

    def _serve(self) -> int:
        served = 0
        if self._path.waiting:
            self._path.drain()
        if self._stats is not None:
            served += self._stats.maybe_emit()
        if self._reports.pending():
            served += int(self._reports.serve())
        return served

    def _until_next_event(self, remaining: float) -> float:
        if self._path.waiting:
            # messages wait for their topic's metadata: look again soon
            remaining = min(remaining, _WAITING_POLL_S)
        if self._stats is not None:
            return max(0.0, min(remaining, self._stats.seconds_to_next()))
        return remaining

    def flush(self, timeout: Optional[float] = -1) -> int:
        """Send everything now and serve the delivery reports until none is left or ``timeout``
        s passed; returns how many messages are still waiting for theirs."""
        self._check_open()
        deadline = time.monotonic() + _timeout_s(timeout)
        self._engine.begin_flush()
        try:
            while True:
                self._serve()
                if self._reports.count == 0:
                    return 0
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return int(self._reports.count)
                self._reports.wait(self._until_next_event(remaining))
        finally:
            self._engine.await_flush(0)  # ends this flush

    def __len__(self) -> int:
        """Messages produced whose delivery report was not served yet."""
        return int(self._reports.count)

    def __bool__(self) -> bool:
        return True  # as confluent-kafka: a producer is true even with nothing queued

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Fail the queued (``PURGE_QUEUE``) and/or in-flight (``PURGE_INFLIGHT``) messages;
        their reports come from the next poll()/flush(). An in-flight message's request still
        completes on the wire, its outcome is no longer reported."""
        self._check_open()
        if in_queue:
            self._path.purge_waiting(KafkaError(PURGE_QUEUE))
            self._engine.abort_undrained_batches(PurgedError(PURGE_QUEUE))
        if in_flight:
            purge_in_flight(self._engine.incomplete_batches(), KafkaError(PURGE_INFLIGHT))

    # ------------------------------------------------------------------ metadata
    def list_topics(
        self, topic: Optional[str] = None, timeout: Optional[float] = -1
    ) -> ClusterMetadata:
        """``ClusterMetadata`` of one topic, or of every topic in the cluster."""
        self._check_open("Handle has been closed")  # confluent-kafka's words here
        limit = _timeout_s(timeout)
        try:
            if topic is not None:
                self._engine.partition_count(topic, limit)
            else:
                self._engine.await_full_listing(limit)
        except errors.KafkaTimeoutError as exc:
            raise KafkaException(
                KafkaError(TIMED_OUT, f"Failed to get metadata: {exc}", retriable=True)
            ) from None
        except errors.KafkaError as exc:
            raise api_error(exc, "Failed to get metadata") from None
        return cluster_metadata(self._engine.metadata.fetch(), topic)

    def cluster_id(self, timeout: Optional[float] = -1) -> Optional[str]:
        """The cluster's id (KIP-78), from the metadata; asks for it when not known yet."""
        self._check_open("Handle has been closed")
        cluster = self._engine.metadata.fetch()
        if cluster.cluster_id is None:
            self.list_topics(None, timeout)
            cluster = self._engine.metadata.fetch()
        return cluster.cluster_id  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ transactions
    def _txn(self, what: str, call: Callable[[], None]) -> None:
        self._check_open()
        if not self._config.transactional:
            raise KafkaException(
                KafkaError(
                    NOT_CONFIGURED,
                    f"{what}: the transactional producer needs transactional.id",
                    fatal=False,
                )
            )
        try:
            call()
        except errors.KafkaError as exc:
            raise api_error(exc, what) from None
        finally:
            # librdkafka serves the delivery reports of the flush it does inside the call
            if what in ("commit_transaction", "abort_transaction"):
                self._serve()

    def init_transactions(self, timeout: Optional[float] = -1) -> None:
        self._txn("init_transactions", lambda: self._kp.init_transactions(_timeout_s(timeout)))

    def begin_transaction(self) -> None:
        self._txn("begin_transaction", self._kp.begin_transaction)
        self._reports.failed = 0  # the messages that fail from now on belong to this one

    def send_offsets_to_transaction(
        self, positions: Any, group_metadata: Any, timeout: Optional[float] = -1
    ) -> None:
        """Commit a consumer's ``positions`` (``TopicPartition`` list, offset = next to read)
        with the transaction. ``group_metadata``: the consumer's ``consumer_group_metadata()``.
        Logical offsets (< 0) are skipped, as librdkafka does."""
        group = read_group_metadata(group_metadata)
        offsets = [tp for tp in positions if getattr(tp, "offset", -1) >= 0]
        self._txn(
            "send_offsets_to_transaction",
            lambda: self._kp.send_offsets_to_transaction(offsets, group, _timeout_s(timeout)),
        )

    def commit_transaction(self, timeout: Optional[float] = -1) -> None:
        """Commit every message produced in the transaction: those still waiting for their
        topic's metadata are sent first (librdkafka's commit flushes its UA partition too)."""

        def commit() -> None:
            deadline = time.monotonic() + _timeout_s(timeout)
            self._send_waiting(deadline)
            # librdkafka flushes, then refuses to commit a transaction one of whose messages
            # failed (purged ones too: an in-flight one may still have been written); a
            # transaction already in error (fenced, a failed batch) is refused with that error
            self._engine.begin_flush()
            self._engine.await_flush(max(0.0, deadline - time.monotonic()))
            tm = self._engine.transaction_manager
            in_error = tm is None or tm.last_error is not None or self._engine.is_fatal_error()
            if self._reports.failed and not in_error:
                raise KafkaException(
                    KafkaError(
                        INCONSISTENT,
                        f"{self._reports.failed} message(s) failed delivery "
                        "(see individual delivery reports)",
                        txn_requires_abort=True,
                    )
                )
            self._kp.commit_transaction(max(0.0, deadline - time.monotonic()))

        self._txn("commit_transaction", commit)

    def _send_waiting(self, deadline: float) -> None:
        """Hand the messages waiting for their topic's metadata to ``send`` (or fail them, as
        ``drain`` does), waiting for metadata updates until ``deadline``."""
        md = self._engine.metadata
        while True:
            version = md.version  # read before the drain: no update slips between
            self._path.drain()
            if not self._path.waiting:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.KafkaTimeoutError(
                    f"{self._path.waiting} message(s) still wait for their topic's metadata"
                )
            try:
                md.await_update(version, min(remaining, _WAITING_POLL_S * 10) * 1000.0)
            except errors.KafkaTimeoutError:
                pass  # drain again: a message may have timed out meanwhile

    def abort_transaction(self, timeout: Optional[float] = -1) -> None:
        """Abort: in-flight messages report ``PURGE_INFLIGHT``, queued ones (and those waiting
        for their topic's metadata) ``PURGE_QUEUE``."""

        def abort() -> None:
            if self._engine.has_ongoing_transaction():
                self._path.purge_waiting(KafkaError(PURGE_QUEUE))
                purge_in_flight(self._engine.incomplete_batches(), KafkaError(PURGE_INFLIGHT))
            self._kp.abort_transaction(_timeout_s(timeout))

        self._txn("abort_transaction", abort)

    # ------------------------------------------------------------------ lifecycle
    def set_sasl_credentials(self, username: str, password: str) -> None:
        """The SASL PLAIN/SCRAM username and password of the next authentications; connections
        already open keep theirs (as librdkafka)."""
        for what, value in (("username", username), ("password", password)):
            if not isinstance(value, str):
                raise TypeError(f"set_sasl_credentials: {what} must be str")
        self._check_open()
        try:
            self._engine.set_sasl_credentials(username, password)
        except errors.ConfigError as exc:
            # librdkafka stores them even then, unused; here the call says so
            raise KafkaException(
                KafkaError(NOT_CONFIGURED, f"set_sasl_credentials: {exc}", fatal=False)
            ) from None

    def close(self, timeout: Optional[float] = -1) -> bool:
        """Abort a transaction still open, flush (serving the delivery reports), then stop.
        Returns True."""
        if self._closed:
            return True
        try:
            if self._config.transactional and self._engine.has_ongoing_transaction():
                # confluent-kafka's close(): the open transaction's messages are purged and
                # reported so, not delivered into a transaction left for the broker to time out
                try:
                    self.abort_transaction(timeout)
                except KafkaException as exc:
                    warnings.warn(
                        f"Producer abort_transaction failed during close: {exc.args[0].str()}",
                        RuntimeWarning,
                        stacklevel=2,
                    )
            self.flush(timeout)
        finally:
            self._closed = True
            self._path.closed_reason = "Producer has been closed"
            self._events.close()
            self._kp.close(0 if self._reports.count else None)
            self._reports.drop()
        return True

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check_open(self, message: str = "Producer has been closed") -> None:
        if self._closed:
            raise RuntimeError(message)


class _Events:
    """librdkafka's error and log events, from the I/O thread to ``error_cb`` and ``logger`` in
    poll(): a connection that fails or is lost is a ``_TRANSPORT`` error (and
    ``_ALL_BROKERS_DOWN`` once no known broker is reachable) and a ``FAIL`` log line at ERROR;
    cproducer's own WARNING-and-above records from this producer's I/O thread are logged too."""

    def __init__(self, producer: Producer, cfg: FacadeConfig) -> None:
        self._producer = producer
        self._reports = producer._reports
        self._error_cb = cfg.error_cb
        self._logger = cfg.logger
        self._log_level = cfg.log_level
        self._name = producer._name
        self._handler: Optional[logging.Handler] = None
        self._down: set = set()
        self._lock = threading.Lock()
        io_thread = producer._engine.io_thread
        if self._logger is not None:
            self._handler = _ForwardingHandler(self._reports, self._logger, self._name)
            self._handler.setLevel(max(cfg.log_level, logging.WARNING))
            self._handler.addFilter(_ThreadFilter(io_thread))
            logging.getLogger("cproducer").addHandler(self._handler)
        # A failed connection is said librdkafka's way (a FAIL line, below), not also as the
        # engine's WARNING; other producers' records pass.
        self._engine_lines = _NotFromThread(io_thread, _CONNECTION_FAILED)
        logging.getLogger(_NETWORK_LOGGER).addFilter(self._engine_lines)
        producer._engine.set_connection_listener(self.on_connection)

    def on_connection(self, node_id: int, host: str, port: int, up: bool, reason: str) -> None:
        """From the I/O thread: a connection to a broker came up, or failed/was lost."""
        label = f"{host}:{port}/{'bootstrap' if node_id < 0 else node_id}"
        with self._lock:
            if up:
                self._down.discard(label)
                return
            self._down.add(label)
            nodes = self._producer._engine.metadata.fetch().nodes
            known = {f"{n.host}:{n.port}/{n.id}" for n in nodes} | self._down
            all_down = self._down >= known
        if self._logger is None:
            # librdkafka's default log callback: a line on stderr from its own thread, at once;
            # for a connection that could not be made (not one the client closed)
            failing = f"{host}:{port}" in self._producer._engine.connection_errors()
            if failing and self._log_level <= logging.ERROR:
                print(
                    f"%3|{time.time():.3f}|FAIL|{self._name}| [thrd:{label}]: {label}: "
                    f"Connect to {host}:{port} failed: {reason}",
                    file=sys.stderr,
                    flush=True,
                )
        elif self._log_level <= logging.ERROR:
            self._reports.push_event(self._log, (logging.ERROR, "FAIL", f"{label}: {reason}"))
        if self._error_cb is not None:
            self._reports.push_event(self._error_cb, KafkaError(TRANSPORT, f"{label}: {reason}"))
            if all_down:
                self._reports.push_event(
                    self._error_cb,
                    KafkaError(ALL_BROKERS_DOWN, f"{len(known)}/{len(known)} brokers are down"),
                )

    def _log(self, line: Any) -> None:
        level, facility, message = line
        self._logger.log(level, "%s [%s] %s", facility, self._name, message)  # type: ignore[union-attr]

    def close(self) -> None:
        if self._handler is not None:
            logging.getLogger("cproducer").removeHandler(self._handler)
            self._handler = None
        logging.getLogger(_NETWORK_LOGGER).removeFilter(self._engine_lines)


_NETWORK_LOGGER = "cproducer.network.network_client"
_CONNECTION_FAILED = "could not be established"


#: the Sender's thread is named this and the client.id (Java's name for it)
_IO_THREAD_NAME = "kafka-producer-network-thread | "


class _StartingFilter(logging.Filter):
    """Drops a failed connection's line from the threads named ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._thread_name = name

    def filter(self, record: logging.LogRecord) -> bool:
        return (
            record.threadName != self._thread_name or _CONNECTION_FAILED not in record.getMessage()
        )


class _NotFromThread(logging.Filter):
    """Drops the records of one thread whose message contains ``text``."""

    def __init__(self, thread: threading.Thread, text: str) -> None:
        super().__init__()
        self._ident = thread.ident
        self._text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self._ident or self._text not in record.getMessage()


class _ThreadFilter(logging.Filter):
    def __init__(self, thread: threading.Thread) -> None:
        super().__init__()
        self._ident = thread.ident

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self._ident


class _ForwardingHandler(logging.Handler):
    """Queues this producer's I/O-thread log records; poll() hands them to the user's logger as
    ``logger.log(level, "%s [%s] %s", facility, name, message)``, as confluent-kafka does."""

    def __init__(self, reports: DeliveryReports, logger: Any, name: str) -> None:
        super().__init__()
        self._reports = reports
        self._logger = logger
        self._name = name

    def emit(self, record: logging.LogRecord) -> None:
        facility = record.name.rsplit(".", 1)[-1].upper()
        line = (record.levelno, facility, record.getMessage())
        self._reports.push_event(self._forward, line)

    def _forward(self, line: Any) -> None:
        level, facility, message = line
        self._logger.log(level, "%s [%s] %s", facility, self._name, message)


def statistics_json(producer: Producer) -> str:
    """The statistics ``stats_cb`` receives, now (for tests and debugging)."""
    stats = producer._stats or Statistics(producer, producer._config)
    return json.dumps(stats.snapshot())
