"""A SASL-authenticating front for a broker that cannot authenticate (Tansu).

``SaslFront`` listens on one port (plain TCP, or TLS with ``ssl_context``: SASL_PLAINTEXT or
SASL_SSL) and does what a Kafka broker's SASL listener does before it serves a client:

- ApiVersions is answered here: the upstream broker's APIs plus SaslHandshake (v0..
  ``handshake_max_version``) and SaslAuthenticate (v0..``authenticate_max_version``; -1 leaves
  it out, as brokers before 1.0 did);
- SaslHandshake picks a mechanism among ``mechanisms`` (else UNSUPPORTED_SASL_MECHANISM with
  the enabled list, and the connection is closed);
- the mechanism's exchange runs in SaslAuthenticate requests (after a v1 handshake) or as bare
  size-prefixed frames (after a v0 one, where a refusal closes the connection);
- anything else before authentication closes the connection; after it, requests are relayed to
  the upstream broker over a connection of its own and the answers come back in order;
- with ``session_lifetime_ms`` > 0 each SaslAuthenticate (v1+) success states the session's
  lifetime (for OAUTHBEARER never past the token's ``exp``), and a request other than a new
  SaslHandshake arriving after the session ended closes the connection (KIP-368, as Kafka's
  broker does); a SaslHandshake on an authenticated connection starts a re-authentication.

The server side of each mechanism is written independently of the client's: PLAIN per RFC 4616,
SCRAM-SHA-256/512 by scramp's ``ScramServer``, OAUTHBEARER per RFC 7628 with unsecured JWTs
(``alg: none``) whose ``exp`` is checked (``token_validator`` replaces the check). Requests and
answers are decoded and encoded with kafka-python's schema-generated classes, so this lives with
the tests. Every authentication, refusal and expiry closure is recorded for the tests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from scramp import ScramException, ScramMechanism

log = logging.getLogger("tests.sasl_front")
_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58
UNSUPPORTED_VERSION = 35
ALL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class Refused(Exception):
    """The client's credentials are refused; the message goes to the client."""


@dataclass
class Authentication:
    connection: int
    mechanism: str
    principal: str
    reauthentication: bool
    token: Optional[str]  # OAUTHBEARER: the token's jti (or its iat) to tell tokens apart
    session_lifetime_ms: int
    at: float


def unsecured_jwt(token: str, now_s: float) -> Tuple[str, float, Dict[str, Any]]:
    """(principal, exp in seconds, claims) of an unsecured JWT; Refused when it is not one, has
    no ``sub``, or has expired."""
    parts = token.split(".")
    if len(parts) != 3 or parts[2] != "":
        raise Refused("not an unsecured JWT (header.claims. with an empty signature)")
    try:
        header, claims = (
            json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in parts[:2]
        )
    except ValueError:
        raise Refused("the JWT is not base64url JSON") from None
    if header.get("alg") != "none":
        raise Refused(f"expected alg none, got {header.get('alg')!r}")
    if not isinstance(claims.get("sub"), str):
        raise Refused("the JWT has no sub claim")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)):
        raise Refused("the JWT has no exp claim")
    if exp <= now_s:
        raise Refused(f"the token expired {now_s - exp:.1f} s ago")
    return claims["sub"], float(exp), claims


class _Plain:
    """RFC 4616: ``[authzid] NUL authcid NUL passwd`` in one message."""

    def __init__(self, front: SaslFront) -> None:
        self.front = front
        self.principal = ""
        self.complete = False

    def step(self, message: bytes) -> bytes:
        parts = message.split(b"\0")
        if len(parts) != 3:
            raise Refused("a PLAIN message has three NUL-separated fields")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if authzid and authzid != user:
            raise Refused("authorization id differs from the user")
        if self.front.users.get(user) != password or not password:
            raise Refused("Invalid username or password")
        self.principal, self.complete = user, True
        return b""


class _Scram:
    def __init__(self, front: SaslFront, mechanism: str) -> None:
        self.front = front
        self.mechanism = mechanism
        self.server = ScramMechanism(mechanism).make_server(front.scram_auth_info(mechanism))
        self.principal = ""
        self.complete = False
        self.stage = 0

    def step(self, message: bytes) -> bytes:
        try:
            if self.stage == 0:
                self.stage = 1
                self.server.set_client_first(message.decode())
                self.principal = str(self.server.client_first_bare.split(",")[0][2:])
                return self.server.get_server_first().encode()
            self.server.set_client_final(message.decode())
            final = self.server.get_server_final()
            self.complete = True
            return final.encode()
        except ScramException as exc:
            raise Refused(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism} ({exc.args[0]})"
            ) from None


class _OAuthBearer:
    """RFC 7628: ``gs2-header ^A auth=Bearer <token> ^A [key=value ^A]* ^A``; a bad token gets
    an error challenge (JSON status), which the client answers with ``^A`` before the refusal."""

    def __init__(self, front: SaslFront) -> None:
        self.front = front
        self.principal = ""
        self.complete = False
        self.error: Optional[str] = None
        self.exp_s: Optional[float] = None
        self.token_id: Optional[str] = None
        self.extensions: Dict[str, str] = {}

    def step(self, message: bytes) -> bytes:
        if self.error is not None:
            if message != b"\x01":
                raise Refused("expected ^A after the error challenge")
            raise Refused(self.error)
        text = message.decode("utf-8", "replace")
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith(("n,", "y,")) or not rest.endswith("\x01\x01"):
            raise Refused("malformed OAUTHBEARER client message")
        fields = dict(kv.split("=", 1) for kv in rest[:-2].split("\x01") if "=" in kv)
        auth = fields.pop("auth", "")
        if not auth.startswith("Bearer "):
            raise Refused("no auth=Bearer field")
        try:
            self.principal, self.exp_s, claims = self.front.token_validator(
                auth[len("Bearer ") :], time.time()
            )
        except Refused as exc:
            self.error = json.dumps({"status": "invalid_token", "detail": str(exc)})
            return self.error.encode()
        self.token_id = str(claims.get("jti", claims.get("iat")))
        self.extensions = fields
        self.complete = True
        return b""


class SaslFront:
    def __init__(
        self,
        upstream: str,
        users: Optional[Dict[str, str]] = None,
        mechanisms: Sequence[str] = ALL_MECHANISMS,
        port: int = 0,
        ssl_context: Optional[ssl.SSLContext] = None,
        session_lifetime_ms: int = 0,
        handshake_max_version: int = 1,
        authenticate_max_version: int = 2,
        token_validator: Callable[[str, float], Tuple[str, float, Dict[str, Any]]] = (
            unsecured_jwt
        ),
        host: str = "127.0.0.1",
    ) -> None:
        up_host, up_port = upstream.rsplit(":", 1)
        self.upstream = (up_host, int(up_port))
        self.users = dict(users or {})
        self.mechanisms = list(mechanisms)
        self.port = port
        self.host = host
        self.ssl_context = ssl_context
        self.session_lifetime_ms = session_lifetime_ms
        self.handshake_max_version = handshake_max_version
        self.authenticate_max_version = authenticate_max_version
        self.token_validator = token_validator
        self.authentications: List[Authentication] = []
        self.refusals: List[Tuple[str, str]] = []  # (mechanism, message sent)
        self.expired_closes = 0
        self.unauthenticated_closes = 0
        self.relayed = 0
        self._scram_info: Dict[Tuple[str, str], Any] = {}
        self._connections = 0
        self._loop = asyncio.new_event_loop()
        self._server: Any = None
        self._writers: set = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._upstream_versions: Dict[int, Tuple[int, int]] = {}

    # ---------------------------------------------------------------- control (any thread)
    def start(self) -> SaslFront:
        self._upstream_versions = _fetch_api_versions(self.upstream)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for w in list(self._writers):
                w.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> SaslFront:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def scram_auth_info(self, mechanism: str) -> Callable[[str], Any]:
        """scramp's auth_fn: (salt, stored key, server key, iterations) of a user, made once."""

        def auth_fn(user: str) -> Any:
            password = self.users.get(user)
            if password is None:
                return None
            key = (mechanism, user)
            if key not in self._scram_info:
                self._scram_info[key] = ScramMechanism(mechanism).make_auth_info(password, 4096)
            return self._scram_info[key]

        return auth_fn

    def api_versions(self) -> Dict[int, Tuple[int, int]]:
        versions = dict(self._upstream_versions)
        versions[SASL_HANDSHAKE] = (0, self.handshake_max_version)
        if self.authenticate_max_version >= 0:
            versions[SASL_AUTHENTICATE] = (0, self.authenticate_max_version)
        else:
            versions.pop(SASL_AUTHENTICATE, None)
        return versions

    # ---------------------------------------------------------------- event loop side
    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=self.ssl_context, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        conn = self._connections
        self._writers.add(writer)
        up_reader: Any = None
        up_writer: Any = None
        # one slot per request, in order: None (the upstream's answer) or (answer, close after)
        slots: asyncio.Queue = asyncio.Queue()
        state: Dict[str, Any] = {"authenticated": False, "expires": None, "mechanism": None}

        async def requests() -> None:
            nonlocal up_reader, up_writer
            raw_server = None  # the mechanism server of a v0 (bare token) exchange
            server: Any = None
            while True:
                frame = await _read_frame(reader)
                if raw_server is not None:
                    try:
                        answer = raw_server.step(frame)
                    except Refused as exc:
                        self.refusals.append((state["mechanism"], str(exc)))
                        await slots.put((None, True))
                        return
                    await slots.put((_SIZE.pack(len(answer)) + answer, False))
                    if raw_server.complete:
                        self._authenticated(conn, state, raw_server, 0)
                        raw_server = None
                    continue
                api_key, version, cid = _HEADER.unpack_from(frame)
                if api_key == API_VERSIONS:
                    await slots.put((self._api_versions_answer(version, cid), False))
                    continue
                if api_key == SASL_HANDSHAKE:
                    request: Any = SaslHandshakeRequest.decode(frame, version=version, header=True)
                    mechanism = request.mechanism
                    if mechanism not in self.mechanisms:
                        answer = _encode(
                            SaslHandshakeResponse(
                                error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=self.mechanisms
                            ),
                            version,
                            cid,
                        )
                        self.refusals.append((mechanism, "unsupported mechanism"))
                        await slots.put((answer, True))
                        return
                    state["mechanism"] = mechanism
                    state["reauthenticating"] = state["authenticated"]
                    server = self._mechanism_server(mechanism)
                    answer = _encode(
                        SaslHandshakeResponse(error_code=0, mechanisms=self.mechanisms),
                        version,
                        cid,
                    )
                    await slots.put((answer, False))
                    if version == 0:
                        raw_server = server
                    continue
                if api_key == SASL_AUTHENTICATE and server is not None:
                    request = SaslAuthenticateRequest.decode(frame, version=version, header=True)
                    close, lifetime = False, 0
                    try:
                        challenge = server.step(request.auth_bytes)
                        error, message = 0, None
                        if server.complete:
                            lifetime = self._authenticated(conn, state, server, version)
                    except Refused as exc:
                        challenge, error, message, close = (
                            b"",
                            SASL_AUTHENTICATION_FAILED,
                            str(exc),
                            True,
                        )
                        self.refusals.append((state["mechanism"], str(exc)))
                    response = SaslAuthenticateResponse(
                        error_code=error,
                        error_message=message,
                        auth_bytes=challenge,
                        session_lifetime_ms=lifetime,
                    )
                    await slots.put((_encode(response, version, cid), close))
                    if server.complete or close:
                        server = None
                    if close:
                        return
                    continue
                if not state["authenticated"]:
                    self.unauthenticated_closes += 1
                    await slots.put((None, True))
                    return
                expires = state["expires"]
                if expires is not None and time.monotonic() > expires:
                    self.expired_closes += 1
                    await slots.put((None, True))
                    return
                if up_writer is None:
                    up_reader, up_writer = await asyncio.open_connection(*self.upstream)
                self.relayed += 1
                await slots.put(None)
                up_writer.write(_SIZE.pack(len(frame)) + frame)
                await up_writer.drain()

        async def responses() -> None:
            while True:
                slot = await slots.get()
                if slot is None:
                    answer = await _read_frame(up_reader)
                    writer.write(_SIZE.pack(len(answer)) + answer)
                else:
                    answer, close = slot
                    if answer is not None:
                        writer.write(answer)
                    if close:
                        await writer.drain()
                        return
                await writer.drain()

        tasks = [asyncio.ensure_future(t()) for t in (requests, responses)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if tasks[0] in done and tasks[0].exception() is None:
                # the requests ended with a refusal queued: the answers go out, then the close
                await asyncio.wait([tasks[1]], timeout=10)
            for t in tasks:
                if t.done() and not t.cancelled():
                    exc = t.exception()
                    if exc is not None and not isinstance(
                        exc, (asyncio.IncompleteReadError, OSError)
                    ):
                        log.error("sasl front connection %d: %r", conn, exc, exc_info=exc)
        except asyncio.CancelledError:
            pass  # the front is closing
        finally:
            for t in tasks:
                t.cancel()
            writer.close()
            if up_writer is not None:
                up_writer.close()
            self._writers.discard(writer)

    def _mechanism_server(self, mechanism: str) -> Any:
        if mechanism == "PLAIN":
            return _Plain(self)
        if mechanism == "OAUTHBEARER":
            return _OAuthBearer(self)
        return _Scram(self, mechanism)

    def _authenticated(self, conn: int, state: Dict[str, Any], server: Any, version: int) -> int:
        """Record a success; the session lifetime to state (0: none)."""
        lifetime = 0
        if self.session_lifetime_ms > 0 and version >= 1:
            lifetime = self.session_lifetime_ms
            exp_s = getattr(server, "exp_s", None)
            if exp_s is not None:
                lifetime = max(min(lifetime, int((exp_s - time.time()) * 1000)), 1)
        state["expires"] = time.monotonic() + lifetime / 1000.0 if lifetime else None
        self.authentications.append(
            Authentication(
                conn,
                state["mechanism"],
                server.principal,
                bool(state.get("reauthenticating")),
                getattr(server, "token_id", None),
                lifetime,
                time.monotonic(),
            )
        )
        state["authenticated"] = True
        return lifetime

    def _api_versions_answer(self, version: int, cid: int) -> bytes:
        versions = self.api_versions()
        top = min(versions.get(API_VERSIONS, (0, 0))[1], ApiVersionsResponse.max_version)
        error = 0
        if version > top:
            error, version = UNSUPPORTED_VERSION, 0  # Kafka answers in the v0 layout
        api = ApiVersionsResponse.ApiVersion
        response = ApiVersionsResponse(
            error_code=error,
            api_keys=[
                api(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(versions.items())
            ],
            throttle_time_ms=0,
        )
        return _encode(response, version, cid)


def _encode(response: Any, version: int, cid: int) -> bytes:
    """A whole answer frame: size, response header (v0/v1 as the API and version want), body."""
    response.API_VERSION = version
    response.with_header(correlation_id=cid)
    data = bytes(response.encode(header=True))
    return _SIZE.pack(len(data)) + data


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = _SIZE.unpack(await reader.readexactly(4))[0]
    return await reader.readexactly(size)


def _fetch_api_versions(upstream: Tuple[str, int]) -> Dict[int, Tuple[int, int]]:
    """The upstream broker's API version ranges (ApiVersions v0, one blocking exchange)."""
    request: Any = ApiVersionsRequest()
    request.API_VERSION = 0
    request.with_header(correlation_id=1, client_id="sasl-front")
    with socket.create_connection(upstream, timeout=5) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = _SIZE.unpack(_recv_exact(sock, 4))[0]
        frame = _recv_exact(sock, size)
    response: Any = ApiVersionsResponse.decode(frame[4:], version=0)
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the upstream broker closed the connection")
        buf += chunk
    return bytes(buf)
