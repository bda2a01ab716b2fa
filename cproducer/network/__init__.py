"""Connections to the brokers (Java's ``clients.NetworkClient`` and ``common.network``): the
``NetworkClient`` driven by the Sender thread (``network_client.py``), its connections
(``kafka_channel.py``) and their per-node states (``cluster_connection_states.py``), the metadata
updater (``metadata_updater.py``), name resolution, and TLS over its non-blocking sockets."""
