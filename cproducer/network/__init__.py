"""Connections to the brokers (Java's ``clients.NetworkClient`` and ``common.network``): the
``NetworkClient`` driven by the Sender thread, and TLS over its non-blocking sockets."""
