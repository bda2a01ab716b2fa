"""One connection to a node: its socket, the frames going out and coming in, the requests in
flight on it and where its setup is (Java's ``KafkaChannel``, with the framing of its
``NetworkSend`` / ``NetworkReceive`` and the matching of ``NetworkClient.InFlightRequests``).

A connection goes connecting → checking_api_versions → [authenticating] → ready; the
NetworkClient drives those steps and the channel keeps where they are. Requests are written with
gather writes (``socket.sendmsg`` over the frame's parts: record batches are never copied into
one bytes object); answers are matched to requests in order by correlation id. With SASL the
channel's ``SaslClientAuthenticator`` answers each handshake step, and when the broker stated a
session lifetime (KIP-368) the channel knows when re-authentication is due.

The channel neither logs nor closes itself on a failure: its methods raise the error
(``OSError``, ``CorruptResponseError``) or return it, and the NetworkClient disconnects with a
reason.
"""

from __future__ import annotations

import selectors
import socket
import struct
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, List, Optional, Tuple

from cproducer import errors
from cproducer.network.cluster_connection_states import (
    AUTHENTICATING,
    CONNECTING,
    READY,
    ConnectionState,
)
from cproducer.protocol import (
    ApiVersionsRequest,
    decode_response,
    decode_response_header,
    encode_frame,
    is_flexible,
)
from cproducer.protocol.broker_versions import cap
from cproducer.security.sasl_authenticator import SaslRawToken

if TYPE_CHECKING:
    from cproducer.network.client_request import ClientRequest

_SIZE = struct.Struct(">i")
_IOV_MAX = 512
#: the most a channel reads in one recv (and the size of the buffer plain sockets read into)
RECV_CHUNK = 256 * 1024
# how many of the newest requests sent without expecting an answer are remembered (a stray
# answer to one is dropped): a bound on what acks=0 keeps per connection
_UNANSWERED_MAX = 1024


class KafkaChannel:
    """A connection to ``node_id`` at ``host:port`` over ``sock`` (connecting since
    ``started_ms``)."""

    __slots__ = (
        "node_id",
        "host",
        "port",
        "sock",
        "state",
        "started_ms",
        "api_versions",
        "send_queue",
        "in_flight",
        "unanswered",
        "recv",
        "last_activity_ms",
        "api_versions_version",
        "events",
        "tls",
        "authenticator",
        "reauthenticate_at_ms",
    )

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        sock: Any,
        started_ms: int,
        api_versions_version: int = ApiVersionsRequest.MAX_VERSION,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.sock = sock
        self.state: ConnectionState = CONNECTING
        self.started_ms = started_ms
        self.api_versions: Dict[int, Tuple[int, int]] = {}
        # frames waiting to be written: (parts, request); the head may be partly written
        self.send_queue: Deque[Tuple[List[memoryview], ClientRequest]] = deque()
        self.in_flight: Deque[ClientRequest] = deque()
        # correlation ids of requests sent without expecting an answer (Produce acks=0): some
        # brokers (Tansu) answer anyway; such an answer is dropped, not taken for a protocol
        # error
        self.unanswered: Deque[int] = deque()
        self.recv = bytearray()
        self.last_activity_ms = started_ms
        self.api_versions_version = api_versions_version
        # what the selector watches (the NetworkClient registers the socket for writing when
        # it connects)
        self.events = selectors.EVENT_WRITE
        self.tls = hasattr(sock, "wants_write")  # sock is a cproducer.network.tls.TlsSocket
        self.authenticator: Any = None  # SaslClientAuthenticator, with SASL
        # KIP-368: stop sending and re-authenticate then
        self.reauthenticate_at_ms: Optional[int] = None

    # ------------------------------------------------------------------ the socket
    def connect_error(self) -> int:
        """The connect's outcome once the socket is writable: 0, or its errno."""
        return int(self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))

    def update_interest(self, selector: selectors.BaseSelector) -> None:
        """Watch for writability only while there is something to write (or TLS wants to)."""
        if self.state == CONNECTING:
            events = selectors.EVENT_WRITE
        elif self.tls:
            write = self.sock.wants_write(bool(self.send_queue))
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if write else 0)
        else:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.send_queue else 0)
        if events == self.events:
            return  # an epoll_ctl per request saved when the whole request went out at once
        try:
            selector.modify(self.sock, events, self)
            self.events = events
        except (KeyError, ValueError):
            pass

    def close(self, selector: selectors.BaseSelector) -> None:
        try:
            selector.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    # ------------------------------------------------------------------ sending
    def enqueue(self, request: ClientRequest, client_id: str) -> None:
        """Frame ``request`` (its correlation id already given) and queue it for writing."""
        if isinstance(request.request, SaslRawToken):  # after a v0 SaslHandshake: no header
            token = request.request.auth_bytes
            frame = memoryview(_SIZE.pack(len(token)) + token)
            views, request.size_bytes = [frame], frame.nbytes
        else:
            # the parts come as the byte memoryviews the send loop slices, their size counted
            views, request.size_bytes = encode_frame(
                request.request, request.api_version, request.correlation_id, client_id
            )
        self.send_queue.append((views, request))
        if request.expect_response:
            self.in_flight.append(request)

    def write(
        self, now_ms: int, written: Callable[[KafkaChannel, ClientRequest, int], None]
    ) -> None:
        """Write as much of the send queue as the socket takes (gather writes); ``written`` is
        told of each request as soon as all of it is out. OSError when the socket fails."""
        if self.tls:
            self.sock.flush_output()  # ciphertext left over from the last call
        send_queue = self.send_queue
        while send_queue:
            views, request = send_queue[0]
            try:
                sent = self.sock.sendmsg(views[:_IOV_MAX])
            except (BlockingIOError, InterruptedError):
                break
            self.last_activity_ms = now_ms
            unsent = request.size_bytes if request.unsent < 0 else request.unsent
            if sent < unsent:
                # the socket is full (or the frame has more parts than one call takes): what
                # went out leaves the views, the rest waits for writability
                request.unsent = unsent - sent
                while sent > 0:
                    n = views[0].nbytes
                    if sent >= n:
                        sent -= n
                        views.pop(0)
                    else:
                        views[0] = views[0][sent:]
                        sent = 0
                break
            request.unsent = 0
            send_queue.popleft()
            if not request.expect_response:
                self.unanswered.append(request.correlation_id)
                if len(self.unanswered) > _UNANSWERED_MAX:
                    self.unanswered.popleft()
            written(self, request, now_ms)

    def has_pending_output(self) -> bool:
        """TLS: requests are queued or ciphertext is left to write (a handshake that has just
        finished lets them go)."""
        return self.tls and (bool(self.send_queue) or self.sock.has_pending_output())

    # ------------------------------------------------------------------ receiving
    def read(self, buffer: bytearray, view: memoryview) -> bool:
        """Take in what the socket has: False when the peer has closed the connection. Plain
        sockets read into ``buffer`` (``RECV_CHUNK`` bytes; ``view`` is a memoryview of it)
        first. OSError when the socket fails."""
        try:
            while True:
                if self.tls:
                    chunk = self.sock.recv(RECV_CHUNK)
                    got = len(chunk)
                    self.recv += chunk
                else:
                    got = self.sock.recv_into(buffer)
                    self.recv += view[:got]
                if not got:
                    return False
                if got < RECV_CHUNK:
                    break
        except (BlockingIOError, InterruptedError):
            pass
        return True

    def handle_frames(
        self,
        max_response_size: int,
        handle: Callable[[KafkaChannel, memoryview, int], bool],
        now_ms: int,
    ) -> Optional[errors.CorruptResponseError]:
        """Give each complete frame received to ``handle`` in turn, until it returns False (it
        closed the connection). The error when a frame's length is one no answer can have."""
        buf = self.recv
        pos = 0
        while len(buf) - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            # a bare SASL token (after a v0 SaslHandshake) may be empty; answers have a header
            smallest = 0 if self.in_flight and self.in_flight[0].request.API_KEY < 0 else 4
            if size < smallest or size > max_response_size:
                reason = f"bad response length {size} from node {self.node_id}"
                return errors.CorruptResponseError(reason)
            if len(buf) - pos - 4 < size:
                break
            frame = memoryview(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
            if not handle(self, frame, now_ms):
                return None
        del buf[:pos]
        return None

    def drop_unanswered(self, frame: memoryview) -> bool:
        """``frame`` answers a request sent without expecting an answer: it is dropped."""
        if len(frame) < 4:
            return False
        cid = _SIZE.unpack_from(frame, 0)[0]  # every response header starts with it
        if cid in self.unanswered and (
            not self.in_flight or self.in_flight[0].correlation_id != cid
        ):
            self.unanswered.remove(cid)
            return True
        return False

    def take_response(self, frame: memoryview) -> Tuple[ClientRequest, Any]:
        """The oldest request in flight and its answer decoded from ``frame`` (the bytes of a
        bare SASL token). CorruptResponseError when the frame does not answer it."""
        req = self.in_flight[0]
        if isinstance(req.request, SaslRawToken):
            self.in_flight.popleft()
            return req, bytes(frame)
        flexible = is_flexible(type(req.request), req.api_version)
        cid, body = decode_response_header(req.request.API_KEY, flexible, frame)
        if cid != req.correlation_id:
            raise errors.CorruptResponseError(
                f"correlation id {cid} does not match the request's {req.correlation_id}"
            )
        response = decode_response(req.request, req.api_version, body)
        self.in_flight.popleft()
        return req, response

    # ------------------------------------------------------------------ the setup steps
    def retry_api_versions(self, response: Any) -> bool:
        """The broker does not speak the ApiVersions version asked: True, and the channel asks
        with the broker's highest next."""
        if response.error_code != errors.UnsupportedVersionError.errno or not response.api_versions:
            return False
        hi = response.api_versions.get(ApiVersionsRequest.API_KEY, (0, 0))[1]
        self.api_versions_version = min(hi, ApiVersionsRequest.MAX_VERSION)
        return True

    def set_api_versions(
        self, api_versions: Dict[int, Tuple[int, int]], caps: Optional[Dict[int, int]]
    ) -> None:
        """What the broker offers, narrowed to ``caps`` (a release's versions) when given."""
        self.api_versions = api_versions if caps is None else cap(api_versions, caps)

    def begin_authentication(self, authenticator: Any, now_ms: int) -> Tuple[Any, int]:
        """The first SASL request and its version. AuthenticationError when the broker offers
        no way to authenticate."""
        self.authenticator = authenticator
        request, version = authenticator.begin(self.api_versions, now_ms)
        self.state = AUTHENTICATING
        return request, version

    def authentication_answered(self, response: Any, now_ms: int) -> Optional[Tuple[Any, int]]:
        """The next SASL request and its version; None once authenticated. AuthenticationError
        when the broker refused."""
        following = self.authenticator.on_response(response, now_ms)
        if following is None:
            self.reauthenticate_at_ms = self.authenticator.reauthenticate_at_ms
        return following

    def reauthentication_due(self, now_ms: int) -> bool:
        """KIP-368: re-authentication is due (the channel has taken no request since) and
        nothing is in flight on it any more."""
        due = self.reauthenticate_at_ms
        return (
            due is not None
            and now_ms >= due
            and self.state == READY
            and not self.in_flight
            and not self.send_queue
        )

    def begin_reauthentication(self, now_ms: int) -> Tuple[Any, int]:
        self.reauthenticate_at_ms = None
        self.state = AUTHENTICATING
        return self.authenticator.begin_reauthentication(now_ms)
