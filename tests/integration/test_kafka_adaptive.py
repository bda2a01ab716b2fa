"""KIP-794's adaptive partitioning on a three-broker Apache Kafka cluster: one broker made slow
(stopped 500 ms out of every 600 ms by SIGSTOP/SIGCONT for 20 s) under a stream of unkeyed
records (``tests/tools/faults_slow.py``: ``slow-broker``; why ``acks=1``, ``batch.size=512`` and
those stops is said there).

The built-in partitioner weighs each partition by how few batches wait in its queue: while the
broker is slow its partitions' queues grow and the sticky partition is less often one of them, so
the broker's share of the records falls well below its fair share (the share of the partitions it
leads); when it is well again its share comes back. With
``partitioner.adaptive.partitioning.enable=false`` the choice stays uniform and the share does not
fall. Java's producer with its defaults runs the same test: the assertions hold for the producer
the design follows. In every run nothing is lost, duplicated or reordered, read back by
librdkafka and by Java's KafkaConsumer. The shares (per broker, per window) are printed; the
shares are counts, not times."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

import pytest

from tests.tools.apache_kafka import ApacheKafkaCluster
from tests.tools.cluster_faults import assert_clean, format_table, run_fault
from tests.tools.faults_slow import format_shares

pytestmark = [pytest.mark.kafka, pytest.mark.cluster]

# below this share of its fair share while slow: moved away; at or above it: not moved
MOVED = 0.8
# at or above this share of its fair share after it recovered: back (8 s of records: the noise of
# a window's share is a few points)
BACK = 0.7
OFF = {"partitioner.adaptive.partitioning.enable": "false"}
RUNS: List[Tuple[str, Dict[str, Any]]] = []  # printed together at the end of the module


@pytest.fixture(scope="module")
def cluster() -> Iterator[ApacheKafkaCluster]:
    with ApacheKafkaCluster(3) as c:
        yield c
    if RUNS:
        print(f"\n{format_shares(RUNS)}")


def _slow_run(cluster: ApacheKafkaCluster, client: str, config: Dict[str, Any], label: str) -> Any:
    run = run_fault(cluster, "slow-broker", client, config=config)
    m = run.measured
    RUNS.append((label, m))
    print(f"\n{format_table([run])}\n{format_shares([(label, m)])}")
    print(
        f"slow broker {m['victim']} leads {m['fair']:.0%} of the partitions; "
        f"{m['cycles']} stops; longest wait while slow {m['stall_s']:.2f} s"
    )
    assert_clean(run)
    assert m["cycles"] >= 20, m  # the broker was stopped again and again
    for w, n in m["counts"].items():
        assert n > 1000, f"{client}: {n} records acknowledged in the {w!r} window"
    return m


@pytest.mark.parametrize("client", ["cproducer", "java"])
def test_adaptive_partitioning_moves_records_off_a_slow_broker_and_back(
    cluster: ApacheKafkaCluster, client: str
) -> None:
    """Defaults (adaptive partitioning on): the slow broker's share while slow is below 80 % of
    its fair share and below its share before; after it recovers the share is back (at least
    70 % of the fair share, and above the share while slow)."""
    m = _slow_run(cluster, client, {}, f"{client} (adaptive on)")
    fair, share = m["fair"], {w: s[m["victim"]] for w, s in m["shares"].items()}
    assert share["slow"] < MOVED * fair, (client, share, fair)
    assert share["after"] >= BACK * fair, (client, share, fair)
    assert share["slow"] < share["before"] and share["slow"] < share["after"], share


def test_without_adaptive_partitioning_the_slow_broker_keeps_its_share(
    cluster: ApacheKafkaCluster,
) -> None:
    """``partitioner.adaptive.partitioning.enable=false``: the sticky partition is chosen
    uniformly, slow broker or not; its share while slow stays at or above 80 % of its fair share.
    The other test's fall is the partitioner's doing, not the measurement's."""
    m = _slow_run(cluster, "cproducer", OFF, "cproducer (adaptive off)")
    share = {w: s[m["victim"]] for w, s in m["shares"].items()}
    assert share["slow"] >= MOVED * m["fair"], (share, m["fair"])
