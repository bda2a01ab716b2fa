"""Mistakes a type checker must report, each on the line marked with its error code:
tests/test_typing.py runs mypy on this file. Never run: it is only type-checked."""

from __future__ import annotations

from cproducer import KafkaProducer


def mistakes() -> None:
    KafkaProducer(lingr_ms=5)  # error: call-arg
    KafkaProducer(linger_ms="5")  # error: arg-type
    KafkaProducer(acks=2)  # error: arg-type
    KafkaProducer(security_protocol="TLS")  # error: arg-type
    KafkaProducer(enable_idempotence="yes")  # error: arg-type
    KafkaProducer(metric_reporters=[])  # error: call-arg
    producer = KafkaProducer()
    producer.send("topic", b"v").get().offset.upper()  # error: attr-defined
    producer.send(b"topic")  # error: arg-type
