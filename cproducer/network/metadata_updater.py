"""Keeps the producer's metadata fresh through the NetworkClient (Java's
``NetworkClient.DefaultMetadataUpdater``, and ``NetworkClient.handleRebootstrap``).

When no known broker can be reached, or no Metadata answer came for
``metadata.recovery.rebootstrap.trigger.ms``, the client goes back to ``bootstrap.servers``
(``metadata.recovery.strategy=rebootstrap``, KIP-899 and KIP-1102; ``none`` keeps trying the
known brokers).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from cproducer import errors
from cproducer.network.client_request import ClientRequest, ClientResponse
from cproducer.network.cluster_connection_states import DISCONNECTED
from cproducer.protocol import MetadataRequest

if TYPE_CHECKING:
    from cproducer.network.network_client import NetworkClient

# Java's DefaultMetadataUpdater logs as its NetworkClient: the logger configured for the
# client's connections carries the rebootstrap messages too
log = logging.getLogger("cproducer.network.network_client")


class DefaultMetadataUpdater:
    """Keeps ProducerMetadata fresh: a Metadata request to the least-loaded node when due.

    Rebootstrap (Java's DefaultMetadataUpdater and NetworkClient.handleRebootstrap): from the
    moment an update is due until one succeeds, ``attempt_start_ms`` is set. With
    ``metadata.recovery.strategy=rebootstrap`` the known brokers are given up for the bootstrap
    servers when none of them can be connected to (no ready connection, every one in its
    reconnect backoff: KIP-899), or when no update succeeded for
    ``metadata.recovery.rebootstrap.trigger.ms`` (then their connections are closed: KIP-1102).
    """

    def __init__(self, client: NetworkClient, metadata: Any) -> None:
        self.client = client
        self.metadata = metadata
        self.in_progress = False
        self.attempt_start_ms: Optional[int] = None
        self.rebootstraps = 0

    def rebootstrap(self, now_ms: int) -> None:
        self.metadata.rebootstrap()
        self.attempt_start_ms = now_ms
        self.rebootstraps += 1

    def maybe_rebootstrap_after_trigger(self, now_ms: int) -> None:
        """KIP-1102: no metadata for the trigger time: drop the known brokers' connections and
        bootstrap again."""
        start = self.attempt_start_ms
        if not self.client.rebootstrap or start is None:
            return
        if now_ms - start <= self.client.rebootstrap_trigger_ms:
            return
        log.info(
            "no metadata for %d ms (metadata.recovery.rebootstrap.trigger.ms=%d): going back "
            "to the bootstrap servers",
            now_ms - start,
            self.client.rebootstrap_trigger_ms,
        )
        self.client.disconnect_all(self.metadata.fetch().nodes, "the client rebootstraps")
        self.rebootstrap(now_ms)

    def maybe_update(self, now_ms: int) -> int:
        """Send a metadata request if one is due; ms until the next check."""
        due = self.metadata.time_to_next_update(now_ms)
        if self.in_progress:
            return self.client.request_timeout_ms
        if due > 0:
            return due
        if self.attempt_start_ms is None:
            self.attempt_start_ms = now_ms
        nodes = self.metadata.fetch().nodes
        node = self.client.least_loaded_node(now_ms, nodes)
        if node is None and self.client.rebootstrap and not self.client.has_ready_connection(nodes):
            # (when the bootstrap servers themselves cannot be reached, this repeats quietly)
            level = logging.DEBUG if self.metadata.fetch().is_bootstrap_configured else logging.INFO
            log.log(
                level,
                "none of the %d known brokers can be reached: going back to the bootstrap servers",
                len(nodes),
            )
            self.rebootstrap(now_ms)
            node = self.client.least_loaded_node(now_ms, self.metadata.fetch().nodes)
        if node is None:
            return self.client.reconnect_backoff_ms
        if self.client.can_send_more(node.id):
            request, partial = self.metadata.new_metadata_request(now_ms)
            version = self.client.api_version_for(node.id, MetadataRequest)
            self.in_progress = True

            def on_response(resp: ClientResponse) -> None:
                self.in_progress = False
                if resp.response is not None and not resp.disconnected:
                    before = self.metadata.version
                    self.metadata.update(resp.response, partial, self.client.time_ms())
                    if self.metadata.version != before:  # an answer with brokers: a success
                        self.attempt_start_ms = None
                else:
                    self.metadata.failed_update(self.client.time_ms(), resp.error)

            self.client.send(
                ClientRequest(
                    node.id,
                    request,
                    version,
                    now_ms,
                    on_response,
                    self.client.request_timeout_ms,
                    True,
                ),
                now_ms,
            )
            return self.client.request_timeout_ms
        if self.client.connection_state(node.id) != DISCONNECTED:
            return self.client.reconnect_backoff_ms
        if self.client.ready(node, now_ms):
            return 0
        if self.client.connection_state(node.id) == DISCONNECTED:
            # could not even start connecting: count it as a failed refresh
            self.metadata.failed_update(now_ms, errors.NetworkError(f"cannot reach {node}"))
        return max(self.client.connection_delay(node, now_ms), 1)

    def handle_disconnection(
        self, node_id: int, auth_error: Optional[BaseException] = None
    ) -> None:
        # Java requests an update when a connection drops (the cluster may have changed); a
        # metadata request in flight on it fails with it, and its on_response resets in_progress
        self.metadata.request_update()
        if auth_error is not None:
            # Java's Metadata.fatalError: whoever waits for metadata gets it now, rather than
            # a timeout after max.block.ms
            self.metadata.fatal_error(auth_error)
