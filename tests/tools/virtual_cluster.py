"""A protocol-aware proxy that presents several virtual brokers over one real broker.

The test brokers (Tansu, a one-node Apache Kafka) run as one node. ``VirtualCluster`` listens on
N loopback ports, one per virtual node (ids 0..N-1), and forwards every request to the real
broker over a connection of its own. It rewrites the answers that name brokers: Metadata lists
the N virtual nodes and makes node ``p % N`` the leader of partition ``p`` (the next live node if
that one is down), FindCoordinator names a live virtual node. Everything else passes through byte
for byte, but for the leader epochs of a consumer's requests (below).

Knobs, per node, changeable while clients run:
- ``set_produce_service_ms(node, ms)``: the node handles Produce requests one at a time (across
  all its connections) and each takes ``ms`` before it is forwarded, as a slow broker's request
  handler would (the KIP-794 experiment: "Kafka-0 injects a 20 ms sleep per produce response");
- ``fail_node(node)``: its connections are cut, it refuses new ones, and Metadata moves its
  partitions to the next live node with a higher leader epoch; ``restore_node(node)`` undoes it;
- ``inject_produce_errors(node, error_code, count)``: the node's next ``count`` Produce requests
  are not forwarded; the proxy answers each with ``error_code`` for every partition in it
  (``inject_txn_errors(node, api_key, ...)`` does the same for EndTxn and AddPartitionsToTxn);
- ``delay_produce_answers(node, ms, count)``: the broker's answers to the node's next ``count``
  Produce requests are held ``ms`` (the requests themselves went through: past
  ``request.timeout.ms`` the client gives up on batches the broker has);
- ``move_leader(partition, node)``: partition ``partition`` (of every topic) gets a new leader and
  a higher leader epoch, at once, as after a reassignment;
- ``freeze_metadata()``: Metadata answers keep showing the leaders (and epochs) of this moment,
  as a broker whose metadata cache lags does (the case KIP-951 is about); ``thaw_metadata()``;
- ``stop_answering_metadata()``: Metadata requests are taken but never answered (nor anything
  after them on the same connection), as by a broker that hangs (KIP-1102's case).

Leader epochs: the broker knows only its own (the proxy's are higher once a leader moved). A
consumer sends the epoch it has from Metadata in Fetch, ListOffsets and OffsetForLeaderEpoch
(KIP-320's CurrentLeaderEpoch); once a leader has moved, the proxy sends these requests up with
it unset (-1: the broker skips the check), or Apache Kafka would answer them FENCED_LEADER_EPOCH
or UNKNOWN_LEADER_EPOCH for as long as the client asks (Tansu does not check the epoch).

Leadership is enforced once a leader has moved (a move or a failure): a Produce request reaching a
node for a partition it does not lead is answered NOT_LEADER_OR_FOLLOWER for that partition (the
others in the request go to the broker), and from Produce v10 on the answer carries KIP-951's
hints: the partition's ``CurrentLeader`` (id and epoch) and the new leader's ``NodeEndpoints``.
``request_versions`` records, per API key, every version a client sent.
ApiVersions advertises Produce up to ``max_produce_version`` (11, the proxy's own limit: v13
names topics by id; 9 shows a client without the hints). ``metadata_requests`` counts Metadata
requests per node; ``moved_at``/``first_not_leader``/``first_accepted`` time each move (the first
NOT_LEADER_OR_FOLLOWER answer written to the client, the first Produce the new leader took).

And for clients the broker cannot serve: ``raise_init_producer_id_version(3)`` sends every
InitProducerId request of an older version to the broker at that version and answers it back in
the client's version (Tansu answers v0-v2 with UNKNOWN_SERVER_ERROR; aiokafka speaks only v0).

Answers are decoded and re-encoded with kafka-python's schema-generated classes (a test
dependency), so this lives with the tests, not in the package.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata import ApiVersionsResponse, FindCoordinatorResponse, MetadataResponse
from kafka.protocol.producer import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)

log = logging.getLogger("tests.virtual_cluster")
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
METADATA, FIND_COORDINATOR, PRODUCE, END_TXN, ADD_PARTITIONS_TO_TXN = 3, 10, 0, 26, 24
API_VERSIONS = 18
FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 1, 2, 23
# the requests that carry the client's CurrentLeaderEpoch (KIP-320), from these versions on
_CURRENT_LEADER_EPOCH = {
    FETCH: (FetchRequest, 9),
    LIST_OFFSETS: (ListOffsetsRequest, 4),
    OFFSET_FOR_LEADER_EPOCH: (OffsetForLeaderEpochRequest, 2),
}
_NEVER: Any = object()  # the answer slot of a request that is never answered
NOT_LEADER_OR_FOLLOWER = 6
FIRST_LEADER_HINT_VERSION = 10  # KIP-951: CurrentLeader and NodeEndpoints in Produce answers
INIT_PRODUCER_ID = 22
# the first version whose answers carry header v1 (tagged fields), per API the proxy rewrites
# (ApiVersions answers never do, so that any client can read them)
_FIRST_FLEXIBLE = {
    METADATA: 9,
    FIND_COORDINATOR: 3,
    PRODUCE: 9,
    END_TXN: 3,
    ADD_PARTITIONS_TO_TXN: 3,
    API_VERSIONS: 2**15,
    INIT_PRODUCER_ID: 2,
}


class VirtualCluster:
    def __init__(
        self,
        upstream: str,
        nodes: int = 3,
        host: str = "127.0.0.1",
        max_produce_version: int = 11,
    ) -> None:
        up_host, up_port = upstream.rsplit(":", 1)
        self.upstream = (up_host, int(up_port))
        self.host = host
        self.n = nodes
        self.max_produce_version = max_produce_version
        self.ports: List[int] = []
        self.service_ms: Dict[int, float] = {}
        self.failed: Set[int] = set()
        self.leader_moves = 0
        self.moved_leaders: Dict[int, int] = {}  # partition -> node, by move_leader
        # (moved_leaders, failed, leader_moves) as Metadata shows them while frozen
        self._frozen: Optional[Tuple[Dict[int, int], Set[int], int]] = None
        self._base_epochs: Dict[Tuple[str, int], int] = {}  # the broker's epochs, from Metadata
        self.produce_requests: Dict[int, int] = {i: 0 for i in range(nodes)}
        self.metadata_requests: Dict[int, int] = {i: 0 for i in range(nodes)}
        self.request_versions: Dict[int, Set[int]] = {}  # api key -> the versions clients sent
        self.not_leader_answers = 0
        self.metadata_unanswered = False
        # per moved partition, time.monotonic() of: the move, the first NOT_LEADER_OR_FOLLOWER
        # answered for it, the first Produce for it that its new leader took
        self.moved_at: Dict[int, float] = {}
        self.first_not_leader: Dict[int, float] = {}
        self.first_accepted: Dict[int, float] = {}
        # (node, api key) -> [error_code, remaining]
        self.injected: Dict[Tuple[int, int], List[Any]] = {}
        self.injected_answers = 0
        self.delayed: Dict[int, List[float]] = {}  # node -> [ms, remaining]
        self.delayed_answers = 0
        self.init_producer_id_version = 0  # older InitProducerId requests go up to this version
        self.epoch_bump_by_init = False
        self._loop = asyncio.new_event_loop()
        self._locks: Dict[int, asyncio.Lock] = {}
        self._servers: Dict[int, Any] = {}
        self._writers: Dict[int, Set[asyncio.StreamWriter]] = {i: set() for i in range(nodes)}
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # ---------------------------------------------------------------- control (any thread)
    def start(self) -> VirtualCluster:
        self._thread.start()
        for node in range(self.n):
            self._call(self._listen(node, 0))
        return self

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.ports)

    def leader_of(self, partition: int) -> int:
        return self._leader(partition, self.moved_leaders, self.failed)

    def _leader(self, partition: int, moved: Dict[int, int], failed: Set[int]) -> int:
        alive = [i for i in range(self.n) if i not in failed]
        node = moved.get(partition, partition % self.n)
        if node in alive or not alive:
            return node
        return min(alive, key=lambda i: (i - node) % self.n)

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch (every move raises it)."""
        return self._base_epochs.get((topic, partition), 0) + self.leader_moves

    def freeze_metadata(self) -> None:
        self._frozen = (dict(self.moved_leaders), set(self.failed), self.leader_moves)

    def thaw_metadata(self) -> None:
        self._frozen = None

    def stop_answering_metadata(self) -> None:
        self.metadata_unanswered = True

    def move_leader(self, partition: int, node: int) -> None:
        """Partition ``partition`` of every topic is led by ``node`` from now on."""
        self.moved_leaders[partition] = node
        self.leader_moves += 1
        self.moved_at[partition] = time.monotonic()
        self.first_not_leader.pop(partition, None)
        self.first_accepted.pop(partition, None)

    def set_produce_service_ms(self, node: int, ms: float) -> None:
        self.service_ms[node] = ms

    def inject_produce_errors(self, node: int, error_code: int, count: int) -> None:
        self.injected[(node, PRODUCE)] = [error_code, count]

    def inject_txn_errors(self, node: int, api_key: int, error_code: int, count: int) -> None:
        """``api_key``: END_TXN or ADD_PARTITIONS_TO_TXN."""
        self.injected[(node, api_key)] = [error_code, count]

    def delay_produce_answers(self, node: int, ms: float, count: int) -> None:
        self.delayed[node] = [ms, count]

    def raise_init_producer_id_version(self, version: int) -> None:
        self.init_producer_id_version = version

    def bump_epochs_by_init(self) -> None:
        """For a broker that cannot bump an epoch (KIP-360; Tansu answers UNKNOWN_SERVER_ERROR):
        an InitProducerId request carrying the producer's id and epoch goes up without them, so
        the broker bumps the transactional id's epoch as a fresh init does."""
        self.epoch_bump_by_init = True

    def fail_node(self, node: int) -> None:
        self._call(self._fail(node))

    def restore_node(self, node: int) -> None:
        self.failed.discard(node)
        self.leader_moves += 1
        self._call(self._listen(node, self.ports[node]))

    def close(self) -> None:
        for node in list(self._servers):
            self._call(self._fail(node))
        self._call(self._cancel_connections())  # clients may still hold connections
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> VirtualCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    # ---------------------------------------------------------------- event loop side
    async def _listen(self, node: int, port: int) -> None:
        server = await asyncio.start_server(
            lambda r, w: self._serve(node, r, w), self.host, port, reuse_address=True
        )
        self._servers[node] = server
        self._locks.setdefault(node, asyncio.Lock())
        if port == 0:
            self.ports.append(server.sockets[0].getsockname()[1])

    async def _cancel_connections(self) -> None:
        for writers in self._writers.values():
            for w in list(writers):
                w.close()  # each connection's tasks end on their own
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=2)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _fail(self, node: int) -> None:
        if node not in self.failed and node in self._servers:
            self.failed.add(node)
            self.leader_moves += 1
        server = self._servers.pop(node, None)
        if server is not None:
            server.close()
        for w in list(self._writers[node]):
            w.close()

    async def _serve(
        self, node: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if node in self.failed:
            writer.close()
            return
        self._writers[node].add(writer)
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        # one slot per request, in order: (correlation id, api key, version, synthetic answer)
        slots: asyncio.Queue = asyncio.Queue()
        queue: asyncio.Queue = asyncio.Queue()

        async def requests() -> None:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version, cid = _HEADER.unpack_from(frame)
                self.request_versions.setdefault(api_key, set()).add(version)
                if api_key == METADATA:
                    self.metadata_requests[node] += 1
                    if self.metadata_unanswered:
                        await slots.put((cid, api_key, version, _NEVER, None))
                        continue
                injected = self.injected.get((node, api_key))
                if injected and injected[1] > 0:
                    injected[1] -= 1
                    self.injected_answers += 1
                    answer = _error_answer(api_key, frame, version, cid, injected[0])
                    await slots.put((cid, api_key, version, answer, None))
                    continue
                moved: Optional[Any] = None
                if api_key == PRODUCE and self.leader_moves:
                    frame, moved = self._check_leadership(node, version, frame)
                    if frame is None:  # no partition of the request is led here
                        answer = _encode(moved, PRODUCE, version, cid)
                        await slots.put((cid, api_key, version, answer, moved))
                        continue
                await slots.put((cid, api_key, version, None, moved))
                if api_key in _CURRENT_LEADER_EPOCH and self.leader_moves:
                    frame = _without_current_leader_epoch(api_key, frame, version)
                if api_key == INIT_PRODUCER_ID and version < self.init_producer_id_version:
                    frame = _init_producer_id_at(self.init_producer_id_version, frame, version)
                elif api_key == INIT_PRODUCER_ID and self.epoch_bump_by_init:
                    frame = _init_producer_id_at(version, frame, version)
                await queue.put((api_key, frame))

        async def service() -> None:
            while True:
                api_key, frame = await queue.get()
                if api_key == PRODUCE:
                    self.produce_requests[node] += 1
                    ms = self.service_ms.get(node, 0)
                    if ms:
                        async with self._locks[node]:
                            await asyncio.sleep(ms / 1000.0)
                up_writer.write(_SIZE.pack(len(frame)) + frame)
                await up_writer.drain()

        async def responses() -> None:
            while True:
                cid, api_key, version, answer, moved = await slots.get()
                if answer is _NEVER:
                    await asyncio.Event().wait()  # until the connection is closed
                if answer is None:
                    size = _SIZE.unpack(await up_reader.readexactly(4))[0]
                    frame = await up_reader.readexactly(size)
                    if _SIZE.unpack_from(frame)[0] != cid:
                        raise ValueError(f"upstream answered out of order (expected {cid})")
                    if api_key == INIT_PRODUCER_ID and version < self.init_producer_id_version:
                        answer = _init_producer_id_answer(
                            frame, self.init_producer_id_version, version
                        )
                    else:
                        answer = self._rewrite(api_key, version, frame)
                    if moved is not None:
                        answer = _merge_produce_answers(answer, moved, version, cid)
                    delay = self.delayed.get(node)
                    if api_key == PRODUCE and delay and delay[1] > 0:
                        delay[1] -= 1
                        self.delayed_answers += 1
                        await asyncio.sleep(delay[0] / 1000.0)
                writer.write(_SIZE.pack(len(answer)) + answer)
                await writer.drain()
                if moved is not None:  # the client has its NOT_LEADER_OR_FOLLOWER now
                    now = time.monotonic()
                    for t in moved.responses:
                        for p in t.partition_responses:
                            if p.index in self.moved_at:
                                self.first_not_leader.setdefault(p.index, now)

        tasks = [asyncio.ensure_future(t()) for t in (requests, service, responses)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                exc = t.exception()
                if exc is not None and not isinstance(exc, (asyncio.IncompleteReadError, OSError)):
                    log.error("virtual node %d: %r", node, exc, exc_info=exc)
        finally:
            for t in tasks:
                t.cancel()
            writer.close()
            up_writer.close()
            self._writers[node].discard(writer)

    def _rewrite(self, api_key: int, version: int, frame: bytes) -> bytes:
        if api_key == METADATA:
            return self._rewrite_metadata(version, frame)
        if api_key == FIND_COORDINATOR:
            return self._rewrite_coordinator(version, frame)
        if api_key == API_VERSIONS:
            return self._rewrite_api_versions(version, frame)
        return frame

    def _check_leadership(self, node: int, version: int, frame: bytes) -> Tuple[Any, Any]:
        """(the request to forward, or None when nothing in it is led by ``node``; the
        NOT_LEADER_OR_FOLLOWER answer for the partitions it does not lead, or None)."""
        request: Any = ProduceRequest.decode(frame, version=version, header=True)
        now = time.monotonic()
        kept, refused = [], []
        for t in request.topic_data:
            here = [pd for pd in t.partition_data if self.leader_of(pd.index) == node]
            elsewhere = [pd.index for pd in t.partition_data if self.leader_of(pd.index) != node]
            for pd in here:
                if pd.index in self.moved_at:
                    self.first_accepted.setdefault(pd.index, now)
            if here:
                kept.append(type(t)(name=t.name, partition_data=here))
            if elsewhere:
                refused.append((t.name, elsewhere))
        if not refused:
            return frame, None
        for _topic, parts in refused:
            self.not_leader_answers += len(parts)
        answer = self._not_leader_answer(refused, version)
        if not kept:
            return None, answer
        request.topic_data = kept
        return bytes(request.encode(version=version, header=True)), answer

    def _not_leader_answer(self, refused: List[Tuple[str, List[int]]], version: int) -> Any:
        """NOT_LEADER_OR_FOLLOWER for each refused partition, with the KIP-951 hints (tagged
        fields: written from v10 on only)."""
        topic_cls = ProduceResponse.TopicProduceResponse
        part_cls = topic_cls.PartitionProduceResponse
        leaders = set()
        topics = []
        for name, parts in refused:
            answers = []
            for p in parts:
                leader = self.leader_of(p)
                leaders.add(leader)
                answers.append(
                    part_cls(
                        index=p,
                        error_code=NOT_LEADER_OR_FOLLOWER,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=-1,
                        record_errors=[],
                        error_message=f"this node does not lead partition {p}",
                        current_leader=part_cls.LeaderIdAndEpoch(
                            leader_id=leader, leader_epoch=self.leader_epoch(name, p)
                        ),
                    )
                )
            topics.append(topic_cls(name=name, partition_responses=answers))
        endpoints = [
            ProduceResponse.NodeEndpoint(node_id=n, host=self.host, port=self.ports[n], rack=None)
            for n in sorted(leaders)
        ]
        return ProduceResponse(responses=topics, throttle_time_ms=0, node_endpoints=endpoints)

    def _rewrite_api_versions(self, version: int, frame: bytes) -> bytes:
        """Produce advertised up to ``max_produce_version``."""
        try:
            resp: Any = ApiVersionsResponse.decode(memoryview(frame)[4:], version=version)
        except Exception:  # an UNSUPPORTED_VERSION answer in the v0 layout: as it is
            return frame
        if resp.error_code != 0:
            return frame
        for api in resp.api_keys or []:
            if api.api_key == PRODUCE:
                api.max_version = min(api.max_version, self.max_produce_version)
        return _encode(resp, API_VERSIONS, version, _SIZE.unpack_from(frame)[0])

    def _alive(self) -> List[int]:
        return [i for i in range(self.n) if i not in self.failed]

    def _rewrite_metadata(self, version: int, frame: bytes) -> bytes:
        resp: Any = MetadataResponse.decode(_body(frame, METADATA, version), version=version)
        broker_cls = (
            type(resp.brokers[0]) if resp.brokers else MetadataResponse.MetadataResponseBroker
        )
        alive = self._alive()
        resp.brokers = [
            broker_cls(node_id=i, host=self.host, port=self.ports[i], rack=None) for i in alive
        ]
        resp.controller_id = alive[0] if alive else -1
        for topic in resp.topics or []:
            for p in topic.partitions or []:
                leader, moves = self.leader_of(p.partition_index), self.leader_moves
                if self._frozen is not None:
                    moved, failed, moves = self._frozen
                    leader = self._leader(p.partition_index, moved, failed)
                p.leader_id = leader
                p.replica_nodes = [leader]
                p.isr_nodes = [leader]
                p.offline_replicas = []
                if version >= 7:
                    base = max(p.leader_epoch, 0)
                    self._base_epochs[(topic.name, p.partition_index)] = base
                    p.leader_epoch = base + moves
        return _encode(resp, METADATA, version, _SIZE.unpack_from(frame)[0])

    def _rewrite_coordinator(self, version: int, frame: bytes) -> bytes:
        body = _body(frame, FIND_COORDINATOR, version)
        resp: Any = FindCoordinatorResponse.decode(body, version=version)
        node = self._alive()[0] if self._alive() else 0
        if version >= 4:
            for c in resp.coordinators or []:
                c.node_id, c.host, c.port = node, self.host, self.ports[node]
        else:
            resp.node_id, resp.host, resp.port = node, self.host, self.ports[node]
        return _encode(resp, FIND_COORDINATOR, version, _SIZE.unpack_from(frame)[0])


def _body(frame: bytes, api_key: int, version: int) -> memoryview:
    """The response body: after the correlation id (and the empty tagged fields of header v1)."""
    skip = 4
    if version >= _FIRST_FLEXIBLE[api_key]:
        if frame[4] != 0:
            raise ValueError("response header with tagged fields: not expected from the broker")
        skip = 5
    return memoryview(frame)[skip:]


def _encode(resp: Any, api_key: int, version: int, cid: int) -> bytes:
    """An answer frame (without its size): response header, then ``resp`` encoded."""
    header = _SIZE.pack(cid) + (b"\x00" if version >= _FIRST_FLEXIBLE[api_key] else b"")
    resp._header = None  # made or decoded without a header; encode() looks for one
    return header + bytes(resp.encode(version=version))


def _without_current_leader_epoch(api_key: int, frame: bytes, version: int) -> bytes:
    """The request ``frame`` with every partition's CurrentLeaderEpoch unset (-1)."""
    cls, first = _CURRENT_LEADER_EPOCH[api_key]
    if version < first:
        return frame
    request: Any = cls.decode(frame, version=version, header=True)
    for t in request.topics:
        for p in t.partitions:
            p.current_leader_epoch = -1
    return bytes(request.encode(version=version, header=True))


def _init_producer_id_at(version: int, frame: bytes, client_version: int) -> bytes:
    """The client's InitProducerId request ``frame``, re-encoded at ``version`` (the new fields
    at their defaults: no producer id or epoch yet)."""
    request: Any = InitProducerIdRequest.decode(frame, version=client_version, header=True)
    raised: Any = InitProducerIdRequest(
        transactional_id=request.transactional_id,
        transaction_timeout_ms=request.transaction_timeout_ms,
    )
    raised.with_header(
        correlation_id=request.header.correlation_id, client_id=request.header.client_id
    )
    return bytes(raised.encode(version=version, header=True))


def _init_producer_id_answer(frame: bytes, version: int, client_version: int) -> bytes:
    """The broker's InitProducerId answer at ``version``, re-encoded in the client's version."""
    response: Any = InitProducerIdResponse.decode(
        _body(frame, INIT_PRODUCER_ID, version), version=version
    )
    return _encode(response, INIT_PRODUCER_ID, client_version, _SIZE.unpack_from(frame)[0])


def _error_answer(api_key: int, frame: bytes, version: int, cid: int, error_code: int) -> bytes:
    """The broker's answer to the request ``frame``, failed with ``error_code`` (for Produce:
    every partition of the request)."""
    response: Any
    if api_key == END_TXN:
        response = EndTxnResponse(throttle_time_ms=0, error_code=error_code)
    elif api_key == ADD_PARTITIONS_TO_TXN:
        request: Any = AddPartitionsToTxnRequest.decode(frame, version=version, header=True)
        result = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
        part = result.AddPartitionsToTxnPartitionResult
        response = AddPartitionsToTxnResponse(
            throttle_time_ms=0,
            results_by_topic_v3_and_below=[
                result(
                    name=t.name,
                    results_by_partition=[
                        part(partition_index=i, partition_error_code=error_code)
                        for i in t.partitions
                    ],
                )
                for t in request.v3_and_below_topics
            ],
        )
    else:
        response = _produce_error_response(frame, version, error_code)
    return _encode(response, api_key, version, cid)


def _merge_produce_answers(answer: bytes, refused: Any, version: int, cid: int) -> bytes:
    """The broker's answer for the partitions a node leads, with the NOT_LEADER_OR_FOLLOWER
    entries (and their hints) of the ones it refused."""
    resp: Any = ProduceResponse.decode(_body(answer, PRODUCE, version), version=version)
    resp.responses = list(resp.responses) + list(refused.responses)
    resp.node_endpoints = list(refused.node_endpoints)
    return _encode(resp, PRODUCE, version, cid)


def _produce_error_response(frame: bytes, version: int, error_code: int) -> Any:
    request: Any = ProduceRequest.decode(frame, version=version, header=True)
    topic_cls = ProduceResponse.TopicProduceResponse
    part_cls = topic_cls.PartitionProduceResponse
    response: Any = ProduceResponse(
        responses=[
            topic_cls(
                name=t.name,
                partition_responses=[
                    part_cls(
                        index=pd.index,
                        error_code=error_code,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=-1,
                        record_errors=[],
                        error_message="injected by the virtual cluster",
                    )
                    for pd in t.partition_data
                ],
            )
            for t in request.topic_data
        ],
        throttle_time_ms=0,
    )
    return response
