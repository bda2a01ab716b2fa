"""What a kafka-python user catches works the same with cproducer: the same test against
kafka-python 3.0's KafkaProducer and ours, each with its own ``errors`` module."""

from __future__ import annotations

from typing import Any, Callable, Tuple

import kafka
import kafka.errors
import pytest

import cproducer
from cproducer import errors
from cproducer.localbroker import LocalBroker


def _client(name: str) -> Tuple[Any, Any]:
    if name == "cproducer":
        return cproducer.KafkaProducer, errors
    return kafka.KafkaProducer, kafka.errors


@pytest.mark.parametrize("client", ["cproducer", "kafka-python"])
def test_too_large_and_after_close_raise_kafka_python_errors(
    broker: LocalBroker, new_topic: Callable[..., str], client: str
) -> None:
    producer_class, errs = _client(client)
    topic = new_topic(1)
    producer = producer_class(bootstrap_servers=broker.bootstrap_servers, max_request_size=2000)
    try:
        producer.send(topic, b"fits").get(timeout=10)
        with pytest.raises(errs.MessageSizeTooLargeError):
            producer.send(topic, b"x" * 5000)
    finally:
        producer.close()
    with pytest.raises(errs.IllegalStateError) as raised:
        producer.send(topic, b"late")
    assert isinstance(raised.value, errs.KafkaError)
    if client == "cproducer":
        assert isinstance(raised.value, errors.ProducerClosedError)
