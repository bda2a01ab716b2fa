"""Relays in front of a cluster's brokers, on the clients' path only, that see the Kafka frames
going by: they count requests, can make the brokers look older and can reset connections.

``RelayedCluster(3)`` is an ``ApacheKafkaCluster`` whose brokers have a second listener,
``EXTERNAL``, advertised at a relay's port: a client bootstrapped at ``bootstrap_servers`` (the
relays) is sent to the relays by every Metadata answer and every KIP-951 leader hint, while the
brokers replicate among themselves and the test tools (``create_topic``, ``leader_of``) talk to
them directly on ``PLAINTEXT``. ``cluster.front`` is the ``KafkaFront``:

- ``count(api_key, since, until)``: the client requests of that API the relays forwarded in that
  window (``METADATA``: how often a producer asked where the leaders are);
- ``cap_produce(9)``: ApiVersions answers offer Produce up to v9, the last version without
  KIP-951's leader hints (``None``: the broker's own range again). A client reads them when it
  connects: ``reset()`` the connections to make it connect again;
- ``reset(node)``: RST (SO_LINGER 0, then close) every client connection to ``node`` (``None``:
  to every broker) at once; ``reset_on_produce_answer(node)``: the next Produce answer ``node``
  writes is dropped and its client connection RST instead: the broker wrote the batch, the client
  never hears so (its retry is a duplicate the broker must recognise);
- ``versions``: the version of every Produce request, when and to which node;
- ``resets`` and ``client_closes``: when each happened (``client_closes``: the client closed a
  connection itself, e.g. on its request timeout).

Frames are parsed by their size prefix and request header only; answers pass through byte for
byte but for the ApiVersions answers ``cap_produce`` edits in place.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from cproducer.localbroker import free_port, host_port
from tests.tools.apache_kafka import ApacheKafkaCluster

PRODUCE, METADATA, API_VERSIONS = 0, 3, 18
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_LINGER_0 = struct.pack("ii", 1, 0)


def _uvarint(buf: bytearray, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def cap_api_versions(body: bytearray, version: int, api_key: int, top: int) -> bool:
    """Lowers ``api_key``'s highest version to ``top`` in an ApiVersions answer ``body`` (after
    the correlation id) of request ``version``, in place. False when the answer is an error (the
    broker answered in v0 then, and the client asks again)."""
    pos = 0
    (error,) = struct.unpack_from(">h", body, pos)
    if error:
        return False
    pos += 2
    flexible = version >= 3
    if flexible:
        n, pos = _uvarint(body, pos)
        n -= 1
    else:
        (n,) = _SIZE.unpack_from(body, pos)
        pos += 4
    for _ in range(max(n, 0)):
        key, _lo, hi = struct.unpack_from(">hhh", body, pos)
        if key == api_key and hi > top:
            struct.pack_into(">h", body, pos + 4, top)
        pos += 6
        if flexible:
            tags, pos = _uvarint(body, pos)
            for _ in range(tags):
                _tag, pos = _uvarint(body, pos)
                size, pos = _uvarint(body, pos)
                pos += size
    return True


class _Conn:
    def __init__(self, node: int, client: asyncio.StreamWriter, up: asyncio.StreamWriter) -> None:
        self.node, self.client, self.up = node, client, up
        self.pending: Dict[int, Tuple[int, int]] = {}  # correlation id -> (api key, version)
        self.reset = False


class KafkaFront:
    """One relay per broker (``add(node_id, target)``), all on one event-loop thread."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.ports: Dict[int, int] = {}  # node id -> the relay's port
        self.targets: Dict[int, Tuple[str, int]] = {}
        self.produce_cap: Optional[int] = None
        self.requests: List[Tuple[float, int, int]] = []  # (when, node, api key)
        self.versions: List[Tuple[float, int, int]] = []  # Produce requests: (when, node, version)
        self.resets: List[Tuple[float, int]] = []  # (when, node)
        self.client_closes: List[Tuple[float, int]] = []  # (when, node)
        self._armed: Dict[int, int] = {}  # node -> Produce answers still to drop
        self._conns: Set[_Conn] = set()
        self._servers: List[Any] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-front")
        self._thread.daemon = True
        self._thread.start()

    # -- set-up ------------------------------------------------------------------------------

    def add(self, node: int, target: Tuple[str, int]) -> int:
        """A relay for broker ``node`` (at ``target``); its port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.ports[node] = sock.getsockname()[1]
        self.targets[node] = target
        self._call(self._listen(node, sock))
        return self.ports[node]

    def address(self, node: int) -> str:
        return host_port(self.host, self.ports[node])

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    # -- knobs and figures -------------------------------------------------------------------

    def cap_produce(self, version: Optional[int]) -> None:
        self.produce_cap = version

    def count(self, api_key: int, since: float = 0.0, until: float = float("inf")) -> int:
        return sum(1 for t, _n, k in list(self.requests) if k == api_key and since <= t < until)

    def reset(self, node: Optional[int] = None) -> int:
        """RSTs the client connections to ``node`` (every broker: None); how many."""
        return int(self._call(self._reset(node)))

    def reset_on_produce_answer(self, node: int, count: int = 1) -> None:
        self._call(self._arm(node, count))

    def armed(self, node: int) -> int:
        return self._armed.get(node, 0)

    # -- the loop ----------------------------------------------------------------------------

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    async def _arm(self, node: int, count: int) -> None:
        self._armed[node] = self._armed.get(node, 0) + count

    async def _listen(self, node: int, sock: socket.socket) -> None:
        async def serve(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await self._serve(node, r, w)

        self._servers.append(await asyncio.start_server(serve, sock=sock))

    async def _reset(self, node: Optional[int]) -> int:
        conns = [c for c in self._conns if node is None or c.node == node]
        for c in conns:
            self._rst(c)
        return len(conns)

    def _rst(self, c: _Conn) -> None:
        if c.reset:
            return
        c.reset = True
        self.resets.append((time.monotonic(), c.node))
        sock = c.client.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_0)
            except OSError:
                pass
        c.client.transport.abort()  # closes at once: with SO_LINGER 0 the kernel sends RST
        c.up.close()

    async def _shutdown(self) -> None:
        for s in self._servers:
            s.close()
        for c in list(self._conns):
            c.client.transport.abort()
            c.up.transport.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(
        self, node: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.targets[node])
        except OSError:
            writer.transport.abort()
            return
        conn = _Conn(node, writer, up_writer)
        self._conns.add(conn)
        try:
            await asyncio.gather(
                self._requests(conn, reader), self._answers(conn, up_reader), return_exceptions=True
            )
        finally:
            self._conns.discard(conn)
            writer.transport.abort()
            up_writer.transport.abort()

    async def _requests(self, conn: _Conn, reader: asyncio.StreamReader) -> None:
        """Client -> broker, frame by frame."""
        try:
            while True:
                head = await reader.readexactly(4)
                frame = await reader.readexactly(_SIZE.unpack(head)[0])
                key, version, correlation = _HEADER.unpack_from(frame)
                self.requests.append((time.monotonic(), conn.node, key))
                if key in (PRODUCE, API_VERSIONS):
                    conn.pending[correlation] = (key, version)
                if key == PRODUCE:
                    self.versions.append((time.monotonic(), conn.node, version))
                conn.up.write(head + frame)
                await conn.up.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            if not conn.reset:
                self.client_closes.append((time.monotonic(), conn.node))
        finally:
            conn.up.close()

    async def _answers(self, conn: _Conn, reader: asyncio.StreamReader) -> None:
        """Broker -> client, frame by frame; ApiVersions capped, Produce answers dropped when
        armed."""
        try:
            while True:
                head = await reader.readexactly(4)
                frame = bytearray(await reader.readexactly(_SIZE.unpack(head)[0]))
                (correlation,) = _SIZE.unpack_from(frame)
                key, version = conn.pending.pop(correlation, (-1, -1))
                if key == API_VERSIONS and self.produce_cap is not None:
                    # the ApiVersions answer's header is v0 whatever the version: the body
                    # starts after the correlation id
                    body = frame[4:]
                    if cap_api_versions(body, version, PRODUCE, self.produce_cap):
                        frame[4:] = body
                elif key == PRODUCE and self._armed.get(conn.node, 0) > 0:
                    self._rst(conn)  # recorded in resets before it counts as done
                    self._armed[conn.node] -= 1
                    return
                conn.client.write(head + frame)
                await conn.client.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            conn.client.close()


class RelayedCluster(ApacheKafkaCluster):
    """An ``ApacheKafkaCluster`` whose clients reach each broker through ``front`` (above):
    every broker listens on ``PLAINTEXT`` (the brokers, the tools) and on ``EXTERNAL``, which
    it advertises at its relay's port; ``bootstrap_servers`` names the relays."""

    def __init__(
        self,
        brokers: int = 3,
        properties: Optional[Mapping[str, str]] = None,
        root: Optional[Any] = None,
    ) -> None:
        super().__init__(brokers, properties, root)
        self.front = KafkaFront(self.host)
        for node in self.brokers:
            plain, external = node.listeners["PLAINTEXT"], free_port()
            relay = self.front.add(node.node_id, (self.host, external))
            node.listeners["EXTERNAL"] = external
            node.properties.update(
                {
                    "listeners": f"PLAINTEXT://{host_port(self.host, plain)},"
                    f"EXTERNAL://{host_port(self.host, external)}",
                    "advertised.listeners": f"PLAINTEXT://{host_port(self.host, plain)},"
                    f"EXTERNAL://{host_port(self.host, relay)}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,"
                    "CONTROLLER:PLAINTEXT",
                }
            )
            # the node wrote its file when it was made: again, with the listeners above
            props = {
                "node.id": str(node.node_id),
                "process.roles": node.roles,
                "log.dirs": str(node.dir / "data"),
                **node.properties,
            }
            node.config_file.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.front.address(n.node_id) for n in self.brokers)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.front.close()
