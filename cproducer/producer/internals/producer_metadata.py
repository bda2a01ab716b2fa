"""ProducerMetadata: the versioned cluster view (Java's Metadata + ProducerMetadata).

Appending threads ``add`` the topics they use and block in ``await_update`` until a newer version
arrives; the NetworkClient's ``DefaultMetadataUpdater`` (in network.py) asks for the topics in use
when an update is due (requested, ``metadata.max.age.ms`` passed, or a new topic), within the
refresh backoff (exponential in the failed attempts, as Java's). Topics unused for
``metadata.max.idle.ms`` are dropped. Every update builds a new immutable ``Cluster``.

Two more ways the view changes (Java's Metadata.rebootstrap and updatePartitionLeadership):
``rebootstrap`` goes back to the bootstrap servers (resolved again when they are resolved at
all: canonical names), and ``update_partition_leadership`` takes the new leaders a Produce
answer named (KIP-951) when their epochs are newer than the view's.

Two times: the refresh schedule runs on the network client's monotonic ms (the ``now_ms`` of
``update``, ``failed_update``, ``time_to_next_update``, ``new_metadata_request``); when a topic
was last used is the sending side's time (``add``'s ``now_ms``, ``topic_time_ms``), which the
fast send path writes straight into ``_topics``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from cproducer import errors
from cproducer.cluster import Cluster, Node, PartitionInfo, TopicPartition
from cproducer.producer.internals.metadata_version import MetadataVersion
from cproducer.protocol import MetadataRequest
from cproducer.utils.backoff import ExponentialBackoff
from cproducer.utils.time import SYSTEM_CLOCK

log = logging.getLogger("cproducer.producer.internals.producer_metadata")

# a topic being created, or without a leader for now: asked for again after the backoff
_RETRIABLE_TOPIC_ERRORS = {
    errors.UnknownTopicOrPartitionError.errno,
    errors.LeaderNotAvailableError.errno,
}


class ProducerMetadata:
    def __init__(
        self,
        refresh_backoff_ms: int = 100,
        refresh_backoff_max_ms: int = 1000,
        metadata_max_age_ms: int = 300000,
        metadata_max_idle_ms: int = 300000,
        topic_time_ms: Callable[[], int] = SYSTEM_CLOCK.milliseconds,
        random: Optional[Callable[[], float]] = None,
    ) -> None:
        """``topic_time_ms``: now, in the time of ``add`` (see the module docstring);
        ``random``: the refresh backoff's jitter source (a float in [0, 1))."""
        self.refresh_backoff_ms = refresh_backoff_ms
        self.refresh_backoff_max_ms = max(refresh_backoff_max_ms, refresh_backoff_ms)
        self.metadata_max_age_ms = metadata_max_age_ms
        self.metadata_max_idle_ms = metadata_max_idle_ms
        self.topic_time_ms = topic_time_ms
        # Java's Metadata.refreshBackoff: retry.backoff.ms -> retry.backoff.max.ms, base 2, 20 %
        self._refresh_backoff = ExponentialBackoff(
            refresh_backoff_ms, 2, self.refresh_backoff_max_ms, 0.2, random
        )
        self._cluster = Cluster.empty()
        self._lock = threading.Lock()
        self._updated = threading.Condition(self._lock)
        # bumped by every successful update; a C field the send paths read (see version)
        self.version_cell = MetadataVersion()
        self._topics: Dict[str, int] = {}  # topic -> last time used (ms)
        self._new_topics: Set[str] = set()
        self._need_full_update = False
        self._need_partial_update = False
        # listings of every topic: asked for, sent, and how many answered so far
        self._list_all_topics = False
        self._listing_in_flight = False
        self.listings = 0
        self._last_refresh_ms = 0
        self._last_successful_refresh_ms = 0
        self._failed_attempts = 0
        self._leader_epochs: Dict[TopicPartition, int] = {}
        self._topic_errors: Dict[str, BaseException] = {}
        self._last_error: Optional[BaseException] = None
        # an error that ends every wait for metadata at once (an authentication failure), kept
        # until an update succeeds
        self._fatal_error: Optional[BaseException] = None
        self._closed = False
        self._bootstrap_addresses: List[Tuple[str, int]] = []
        self._resolve_bootstrap: Optional[Callable[[], List[Tuple[str, int]]]] = None
        #: what topic metadata requests say in allow_auto_topic_creation (the producer's
        #: allow.auto.create.topics): whether the broker may create a missing topic
        self.allow_auto_topic_creation = True

    # ------------------------------------------------------------------ reads
    @property
    def version(self) -> int:
        """Bumped by every successful update (0 before the first)."""
        return self.version_cell.value

    @version.setter
    def version(self, value: int) -> None:
        self.version_cell.value = value

    def fetch(self) -> Cluster:
        return self._cluster

    @property
    def topics(self) -> List[str]:
        return list(self._topics)

    @property
    def last_successful_update_ms(self) -> int:
        """When the last update succeeded (monotonic ms; 0: none yet). metrics' metadata-age."""
        return self._last_successful_refresh_ms

    # ------------------------------------------------------------------ bootstrap / topics
    def bootstrap(
        self,
        addresses: Sequence[Tuple[str, int]],
        resolve: Optional[Callable[[], List[Tuple[str, int]]]] = None,
    ) -> None:
        """The view of the bootstrap servers alone. ``resolve``: makes ``addresses`` again for
        a rebootstrap (they came from resolving names)."""
        with self._lock:
            self._bootstrap_addresses = list(addresses)
            self._resolve_bootstrap = resolve
            self._cluster = Cluster.bootstrap(addresses)
            self._need_full_update = True
            self.version += 1

    def rebootstrap(self) -> None:
        """Back to the bootstrap servers (KIP-899): the known brokers could not be reached."""
        addresses = self._bootstrap_addresses
        if self._resolve_bootstrap is not None:
            try:
                addresses = self._resolve_bootstrap()
            except (errors.KafkaError, OSError) as exc:
                log.warning(
                    "cannot resolve the bootstrap servers again (%s): using %s", exc, addresses
                )
        log.debug("rebootstrapping with %s", addresses)
        with self._lock:
            self._bootstrap_addresses = list(addresses)
            self._cluster = Cluster.bootstrap(addresses)
            self._need_full_update = True
            self.version += 1

    def add(self, topic: str, now_ms: int) -> None:
        """Mark ``topic`` as used at ``now_ms`` (``topic_time_ms``'s time); a new topic triggers
        a (partial) update soon."""
        if topic in self._topics:
            self._topics[topic] = now_ms
            return
        with self._lock:
            if topic not in self._topics:
                self._topics[topic] = now_ms
                self._new_topics.add(topic)
                self._need_partial_update = True

    def request_update(self) -> int:
        with self._lock:
            self._need_full_update = True
            return self.version

    def request_update_for_topic(self, topic: str) -> int:
        with self._lock:
            if topic in self._new_topics:
                self._need_partial_update = True
            else:
                self._need_full_update = True
            return self.version

    def request_full_listing(self) -> int:
        """The next update asks for every topic of the cluster (a listing: the updates after it
        go back to the topics in use). Returns the count of listings answered so far: the
        listing asked for here is in once ``listings`` passed it."""
        with self._lock:
            self._list_all_topics = True
            self._need_full_update = True
            return self.listings

    def update_requested(self) -> bool:
        return self._need_full_update or self._need_partial_update

    def await_update(self, last_version: int, timeout_ms: float) -> None:
        """Block until the version passes ``last_version``; KafkaTimeoutError after timeout_ms."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        with self._lock:
            while self.version <= last_version and not self._closed:
                self._maybe_throw_fatal_error()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.KafkaTimeoutError(
                        f"metadata not updated within {timeout_ms:g} ms"
                        + (f" (last error: {self._last_error})" if self._last_error else "")
                    )
                self._updated.wait(remaining)
            if self._closed:
                raise errors.ProducerClosedError("the producer was closed")

    def _maybe_throw_fatal_error(self) -> None:
        exc = self._fatal_error
        if exc is not None:
            # a new instance per waiting thread: one shared exception would gather every
            # thread's traceback
            fresh = type(exc)(*exc.args)
            fresh.__cause__ = exc.__cause__
            raise fresh

    def fatal_error(self, exc: BaseException) -> None:
        """Java's Metadata.fatalError: wake every waiter with ``exc``."""
        with self._lock:
            self._fatal_error = exc
            self._last_error = exc
            self._updated.notify_all()

    def maybe_throw_exception_for_topic(self, topic: str) -> None:
        err = self._topic_errors.get(topic)
        if err is not None:
            raise err

    # ------------------------------------------------------------------ scheduling
    def _backoff_ms(self) -> int:
        # Java's timeToAllowUpdate: backoff(attempts - 1) after failures, backoff(0) otherwise
        return self._refresh_backoff.backoff(max(self._failed_attempts - 1, 0))

    def time_to_next_update(self, now_ms: int) -> int:
        if self.update_requested():
            expire = 0
        else:
            expire = max(self._last_successful_refresh_ms + self.metadata_max_age_ms - now_ms, 0)
        if self._last_refresh_ms == 0:
            return expire
        # the refresh backoff is at most its max interval: past that bound it cannot delay the
        # update, and its jittered value is not drawn (the Sender asks this on every loop)
        since_refresh = now_ms - self._last_refresh_ms
        if since_refresh >= self._refresh_backoff.max_interval:
            return expire
        allow = max(self._backoff_ms() - since_refresh, 0)
        return max(expire, allow)

    def new_metadata_request(self, now_ms: int) -> Tuple[MetadataRequest, bool]:
        """(request, is_partial): only new topics when just those are due, else all in use."""
        with self._lock:
            self._expire_idle_topics(self.topic_time_ms())
            if self._list_all_topics:
                self._list_all_topics = False
                self._listing_in_flight = True
                return MetadataRequest(None, False), False
            create = self.allow_auto_topic_creation
            if self._need_partial_update and not self._need_full_update and self._new_topics:
                return MetadataRequest(sorted(self._new_topics), create), True
            return MetadataRequest(sorted(self._topics), create), False

    def _expire_idle_topics(self, now_ms: int) -> None:
        for topic, last_used in list(self._topics.items()):
            if last_used + self.metadata_max_idle_ms < now_ms:
                log.debug("topic %s unused for %d ms: dropped", topic, self.metadata_max_idle_ms)
                del self._topics[topic]
                self._new_topics.discard(topic)

    # ------------------------------------------------------------------ updates
    def update(self, response: Any, is_partial: bool, now_ms: int) -> None:
        """A MetadataResponse arrived: build the new Cluster and wake waiters."""
        with self._lock:
            if not response.brokers:
                self._failed_locked(now_ms, errors.KafkaError("metadata response has no brokers"))
                return
            nodes = {b.id: b for b in response.brokers}
            partitions: Dict[TopicPartition, PartitionInfo] = {}
            if is_partial:
                old = self._cluster
                for topic in old.topics:
                    for p in old.partitions_for_topic(topic):
                        leader = nodes.get(p.leader.id) if p.leader is not None else None
                        partitions[p.topic_partition] = p._replace(leader=leader)
            retry_topics: Set[str] = set()
            invalid, unauthorized = set(), set()
            fetched: Set[str] = set()
            for t in response.topics:
                name = t.name or ""
                fetched.add(name)
                if t.error_code == errors.NoError.errno:
                    self._topic_errors.pop(name, None)
                    for old_tp in [tp for tp in partitions if tp.topic == name]:
                        del partitions[old_tp]
                    for p in t.partitions:
                        tp = TopicPartition(name, p.partition)
                        known = self._leader_epochs.get(tp, -1)
                        if 0 <= p.leader_epoch < known:
                            prev = self._cluster.partition(tp)
                            if prev is not None:
                                partitions[tp] = prev  # stale answer: keep what we know
                                continue
                        if p.leader_epoch >= 0:
                            self._leader_epochs[tp] = p.leader_epoch
                        partitions[tp] = PartitionInfo(
                            name,
                            p.partition,
                            nodes.get(p.leader_id),
                            tuple(nodes[i] for i in p.replica_ids if i in nodes),
                            tuple(nodes[i] for i in p.isr_ids if i in nodes),
                            tuple(nodes[i] for i in p.offline_replica_ids if i in nodes),
                        )
                        if p.error_code in _RETRIABLE_TOPIC_ERRORS or p.leader_id < 0:
                            retry_topics.add(name)
                elif t.error_code in _RETRIABLE_TOPIC_ERRORS:
                    retry_topics.add(name)
                elif t.error_code == errors.InvalidTopicError.errno:
                    invalid.add(name)
                    self._topic_errors[name] = errors.InvalidTopicError(f"invalid topic {name!r}")
                elif t.error_code == errors.TopicAuthorizationFailedError.errno:
                    unauthorized.add(name)
                    self._topic_errors[name] = errors.TopicAuthorizationFailedError(name)
                else:
                    err = errors.exception_for(t.error_code)
                    if err is not None:
                        self._topic_errors[name] = err
            controller = nodes.get(response.controller_id)
            self._cluster = Cluster(
                nodes.values(),
                partitions.values(),
                unauthorized_topics=unauthorized,
                invalid_topics=invalid,
                controller=controller,
                cluster_id=response.cluster_id,
                leader_epochs=self._epochs_of(partitions),
            )
            self._new_topics -= fetched - retry_topics
            if is_partial:
                self._need_partial_update = bool(self._new_topics)
            else:
                self._need_full_update = False
                self._need_partial_update = bool(self._new_topics - fetched)
            if retry_topics:
                # topics being created or leaderless: ask again after the backoff
                self._need_partial_update = True
                self._new_topics |= retry_topics & set(self._topics)
            self._last_refresh_ms = now_ms
            self._last_successful_refresh_ms = now_ms
            self._failed_attempts = 0
            self._last_error = None
            self._fatal_error = None
            if self._listing_in_flight:
                self._listing_in_flight = False
                self.listings += 1
            self.version += 1
            self._updated.notify_all()

    def _epochs_of(self, partitions: Dict[TopicPartition, PartitionInfo]) -> Dict[Any, int]:
        known = self._leader_epochs
        return {tp: known[tp] for tp in partitions if tp in known}

    def update_partition_leadership(
        self, leaders: Dict[TopicPartition, Tuple[int, int]], nodes: Sequence[Node]
    ) -> Set[TopicPartition]:
        """KIP-951 (Java's updatePartitionLeadership): ``leaders`` maps partitions to the
        (leader id, leader epoch) a Produce answer named, ``nodes`` are the endpoints it gave.
        A partition takes its new leader when the epoch is newer than the view's, the leader's
        endpoint is known (given or already in the view) and the partition is in the view. The
        partitions that changed."""
        with self._lock:
            old = self._cluster
            by_id = {n.id: n for n in old.nodes}
            for n in nodes:
                by_id[n.id] = n  # the answer's endpoints are the newest
            changed: Dict[TopicPartition, PartitionInfo] = {}
            for tp, (leader_id, epoch) in leaders.items():
                current = old.partition(tp)
                if current is None or leader_id < 0 or epoch < 0:
                    continue
                if epoch <= self._leader_epochs.get(tp, -1) or leader_id not in by_id:
                    continue
                changed[tp] = current._replace(leader=by_id[leader_id])
                self._leader_epochs[tp] = epoch
            if not changed:
                return set()
            partitions = {
                p.topic_partition: p for t in old.topics for p in old.partitions_for_topic(t)
            }
            partitions.update(changed)
            self._cluster = Cluster(
                by_id.values(),
                partitions.values(),
                unauthorized_topics=old.unauthorized_topics,
                invalid_topics=old.invalid_topics,
                internal_topics=old.internal_topics,
                controller=old.controller,
                cluster_id=old.cluster_id,
                leader_epochs=self._epochs_of(partitions),
            )
            self.version += 1
            self._updated.notify_all()
            log.debug("new leaders from a Produce answer: %s", sorted(map(str, changed)))
            return set(changed)

    def failed_update(self, now_ms: int, exc: Optional[BaseException] = None) -> None:
        with self._lock:
            self._failed_locked(now_ms, exc)

    def _failed_locked(self, now_ms: int, exc: Optional[BaseException]) -> None:
        self._last_refresh_ms = now_ms
        self._failed_attempts += 1
        self._last_error = exc
        if self._listing_in_flight:  # ask for the listing again
            self._listing_in_flight = False
            self._list_all_topics = True
            self._need_full_update = True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._updated.notify_all()
