"""Network faults on a three-broker Apache Kafka cluster (replication factor 3,
``min.insync.replicas=2``) while the producer sends (``tests/tools/faults_moves.py``); the
clients reach the brokers through relays (``RelayedCluster``) that see when a client closes a
connection and can reset one.

- A leader that stops answering (SIGSTOP) until the controller fences it
  (``broker.session.timeout.ms``, 9 s): the clients, with ``request.timeout.ms`` at 5 s, give
  up on the requests in flight to it and close the connection while it is still stopped, and
  retry them, on the new leader once Metadata names it.
- A connection reset (RST) in place of a Produce answer the broker wrote, five times: the
  retried batch is a duplicate the broker recognises.

With idempotence on, nothing is lost, duplicated or reordered and no record fails, for cproducer,
librdkafka and Java's producer alike, read back by librdkafka and by Java's KafkaConsumer. When
each client noticed the pause and the stalls are printed, not asserted."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.tools.cluster_faults import assert_clean, format_table, run_fault
from tests.tools.faults_moves import REQUEST_TIMEOUT_MS, RESETS
from tests.tools.kafka_front import RelayedCluster

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

CLIENTS = ["cproducer", "librdkafka", "java"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RelayedCluster]:
    with RelayedCluster(3) as c:
        yield c


@pytest.mark.parametrize("client", CLIENTS)
def test_paused_leader_requests_time_out_and_land_once(
    cluster: RelayedCluster, client: str
) -> None:
    """Partition 0's leader stopped (SIGSTOP) past ``request.timeout.ms`` until the controller
    moves its partitions: the client closes its connection to the stopped broker before the
    broker resumes (its requests there timed out), every record lands exactly once, in order,
    without an error. librdkafka is told to wait 5 s for an answer by ``socket.timeout.ms``
    (60 s by default): its ``request.timeout.ms`` is only the broker's wait for the replicas, so
    by default it keeps waiting for the stopped broker for a minute."""
    # librdkafka waits for an answer socket.timeout.ms (its request.timeout.ms is the broker's
    # wait for the replicas): the same 5 s as the others' request.timeout.ms
    extra = {"socket.timeout.ms": REQUEST_TIMEOUT_MS} if client == "librdkafka" else {}
    run = run_fault(cluster, "leader-paused", client, config=extra)
    assert_clean(run)
    m = run.measured
    print(
        f"\n{format_table([run])}\n{client}: paused {m['paused_s']:.2f} s, noticed after "
        f"{m['noticed_s']} s (request.timeout.ms 5 s), fenced after {m['fenced_s']} s, "
        f"stall of any partition {m['stall_any_s']}"
    )
    assert m["stall_s"] is not None, f"{client}: no record of partition 0 acknowledged"
    assert m["noticed_before_resume"], f"{client} never gave up on the stopped broker: {m}"


@pytest.mark.parametrize("client", CLIENTS)
def test_connection_reset_mid_request_lands_once(cluster: RelayedCluster, client: str) -> None:
    """Five Produce answers of partition 0's leader dropped, the client's connection reset in
    their place: the batches were written, the client retries them on a new connection, and
    idempotence keeps each record in the topic exactly once, in order, without an error."""
    run = run_fault(cluster, "connection-reset", client)
    assert_clean(run)
    print(f"\n{format_table([run])}\n{client}: stalls after each reset {run.measured['stalls_s']}")
    assert run.measured["resets"] >= RESETS
