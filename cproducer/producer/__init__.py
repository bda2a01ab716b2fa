"""The producer's API layer (Java's ``clients.producer``): ``KafkaProducer`` and what it calls per
record before the accumulator: serializers, interceptors, partitioners, the C fast paths of
``send`` and ``send_many``, and the futures a caller holds."""

from cproducer.producer.kafka_producer import KafkaProducer

__all__ = ["KafkaProducer"]
