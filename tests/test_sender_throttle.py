"""Sender: a transactional request whose node is throttled (a quota, KIP-219) waits, and the
Sender's poll wakes when the throttle ends: nothing else would wake it then."""

from __future__ import annotations

from typing import Any, List, Optional

from cproducer.cluster import Node, TopicPartition
from cproducer.network.network_client import NO_DELAY_LIMIT_MS, ClientRequest
from cproducer.producer.internals.record_accumulator import ReadyCheckResult
from cproducer.producer.internals.sender import Sender
from cproducer.producer.internals.transaction_manager import TransactionManager
from cproducer.producer.internals.txn_request_handlers import EndTxnHandler
from cproducer.utils.time import ManualClock

NODE = Node(1, "h", 9092)
TP = TopicPartition("t", 0)


class ThrottledClient:
    """A client whose one node stays connected but throttled for ``throttle_ms``."""

    def __init__(self, clock: ManualClock, throttle_ms: int) -> None:
        self.clock = clock
        self.until = clock.monotonic_ms() + throttle_ms
        self.sent: List[ClientRequest] = []
        self.poll_timeouts: List[int] = []

    def ready(self, node: Node, now_ms: int) -> bool:
        return now_ms >= self.until

    def connection_failed(self, node: Node) -> bool:
        return False

    def connection_delay(self, node: Node, now_ms: int) -> int:
        return max(self.until - now_ms, 0) or NO_DELAY_LIMIT_MS

    def api_version_for(self, node_id: int, request_cls: Any) -> int:
        return 3

    def send(self, request: ClientRequest, now_ms: int) -> None:
        self.sent.append(request)

    def poll(self, timeout_ms: int, now_ms: int) -> List[Any]:
        self.poll_timeouts.append(timeout_ms)
        return []

    def take_authentication_failures(self) -> List[Any]:
        return []

    def wakeup(self) -> None:
        pass


class IdleAccumulator:
    """Nothing to send: the poll would sleep its longest (a second) but for the throttle."""

    def ready(self, cluster: Any, now_ms: int) -> ReadyCheckResult:
        return ReadyCheckResult(set(), NO_DELAY_LIMIT_MS, set())

    def drain(self, cluster: Any, nodes: Any, max_size: int, now_ms: int) -> dict:
        return {}

    def expired_batches(self, now_ms: int) -> List[Any]:
        return []

    def has_undrained(self) -> bool:
        return False

    def has_incomplete(self) -> bool:
        return False


class OneNodeMetadata:
    nodes = [NODE]

    def fetch(self) -> Any:
        return self

    def node_by_id(self, node_id: int) -> Optional[Node]:
        return NODE if node_id == NODE.id else None


def committing() -> TransactionManager:
    """A transaction with TP in it, committing: EndTxn is the next request, to NODE."""
    tm = TransactionManager("tx", 60000)
    tm.initialize_transactions()
    tm.coordinator = NODE
    tm.producer_id_initialized(7, 0)
    tm.begin_transaction()
    tm.partitions_added([TP])
    tm.begin_commit()
    return tm


def test_a_transactional_request_for_a_throttled_node_wakes_the_poll_when_the_throttle_ends() -> (
    None
):
    clock = ManualClock()
    client = ThrottledClient(clock, throttle_ms=250)
    tm = committing()
    sender = Sender(
        client,  # type: ignore[arg-type]
        OneNodeMetadata(),  # type: ignore[arg-type]
        IdleAccumulator(),  # type: ignore[arg-type]
        guarantee_message_order=False,
        max_request_size=1 << 20,
        acks=-1,
        retries=3,
        request_timeout_ms=30000,
        delivery_timeout_ms=120000,
        transaction_manager=tm,
        clock=clock,
    )
    sender.run_once()
    assert client.sent == [] and client.poll_timeouts == [250]
    clock.sleep(100)
    sender.run_once()
    assert client.sent == [] and client.poll_timeouts[-1] == 150
    clock.sleep(150)
    sender.run_once()
    (end_txn,) = client.sent
    assert end_txn.request.API_KEY == EndTxnHandler.request_class.API_KEY
    # with nothing held back, the poll is the accumulator's again (at most a second)
    assert client.poll_timeouts[-1] == 1000
