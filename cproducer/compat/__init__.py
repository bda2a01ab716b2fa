"""Drop-in facades: other Kafka clients' APIs over cproducer's ``KafkaProducer``, side by side.

- :mod:`cproducer.compat.kafka_python`: kafka-python's ``KafkaProducer``, which is the engine's own
  API (kafka-python's names, errors and structs); ``from cproducer import KafkaProducer`` too.
- :mod:`cproducer.compat.aiokafka`: aiokafka's ``AIOKafkaProducer`` (short name ``cproducer.aio``).
- :mod:`cproducer.compat.confluent`: confluent-kafka's ``Producer`` (librdkafka's configuration
  names, defaults, partitioners, error codes and delivery-report semantics).

Each facade calls the engine only through :class:`cproducer.producer.engine` 's public interface.
"""
