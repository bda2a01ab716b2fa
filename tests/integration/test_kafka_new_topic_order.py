"""Each partition in send order when records go to a topic the moment it is created.

Apache Kafka names a new partition's leader in Metadata a moment before the leader takes writes
(KAFKA-15591): meanwhile Produce is answered NOT_LEADER_OR_FOLLOWER, and a leader with no state
for a producer id writes whatever sequence comes first. A producer already connected (the
defaults: idempotence on, linger.ms 5) sends 20,000 keyed records to a 6-partition topic created
a moment before and flushes: every record is acknowledged, lands once, and each partition's
offsets follow the send order, read back by librdkafka. librdkafka runs the same scenario, which
shows the test asks what a peer gives. ``CPRODUCER_NEW_TOPIC_ROUNDS`` rounds (topics) per client
(3 by default: the moment is short, so a few topics make meeting it likely);
``benchmarks/new_topic_order.py`` runs many, Java's producer too.
"""

from __future__ import annotations

import os

import pytest

from tests.tools.apache_kafka import ApacheKafka
from tests.tools.new_topic_order import read_and_judge, send_to_new_topic

ROUNDS = int(os.environ.get("CPRODUCER_NEW_TOPIC_ROUNDS", "3"))

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("client", ["cproducer", "librdkafka"])
def test_records_sent_to_a_new_topic_land_in_send_order(
    kafka_broker: ApacheKafka, client: str
) -> None:
    for _ in range(ROUNDS):
        rnd = send_to_new_topic(client, kafka_broker, records=20000, partitions=6)
        v = read_and_judge(kafka_broker, rnd)
        errors = sorted({o[2] for o in rnd.outcomes.values() if o[2] is not None})
        assert v.clean, f"{client}, topic {rnd.topic}: {v}; errors: {errors[:3]}"
        assert v.acked == 20000
