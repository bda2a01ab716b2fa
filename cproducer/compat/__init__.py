"""Drop-in facades: other Kafka clients' APIs over cproducer's ``KafkaProducer``.

``cproducer.compat.confluent``: confluent-kafka's ``Producer`` (librdkafka's configuration names,
defaults, partitioners, error codes and delivery-report semantics).
"""
