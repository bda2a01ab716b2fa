"""TLS for the NetworkClient (``security.protocol=SSL``): a non-blocking TLS connection over one
TCP socket, driven by the selector loop like a plain one.

``TlsSocket`` runs OpenSSL on memory buffers (``ssl.MemoryBIO`` + ``SSLObject``): bytes read
from the socket go into the incoming buffer, the ciphertext OpenSSL produces is written out from
``_out``. It has the few socket methods the NetworkClient uses (``sendmsg``, ``recv``,
``fileno``, ``getsockopt``, ``shutdown``, ``close``) with their non-blocking meaning: nothing to
do now is ``BlockingIOError``. Two extra calls let the client keep its selector interest right:
``wants_write(queued)`` and ``flush_output()`` (ciphertext left over when the socket was full).
The handshake happens inside the first ``sendmsg``/``recv`` calls after the TCP connect.

``ssl_context_from_config`` builds the ``SSLContext`` from the Java client's PEM settings.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any, Callable, List, Optional

from cproducer.errors import ConfigError
from cproducer.network.host_resolver import takes_address

_RECORD_PLAINTEXT = 64 * 1024  # plaintext taken per sendmsg (OpenSSL cuts it into 16 KiB records)
_READ_CHUNK = 256 * 1024


class TlsSocket:
    def __init__(self, sock: socket.socket, context: ssl.SSLContext, server_hostname: str) -> None:
        self.sock = sock
        self._in = ssl.MemoryBIO()
        self._out_bio = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out_bio, server_hostname=server_hostname)
        self._out = bytearray()  # ciphertext waiting for the socket
        self.handshake_done = False
        self._eof = False

    # ---------------------------------------------------------------- what the selector needs
    def fileno(self) -> int:
        return self.sock.fileno()

    def getsockopt(self, *args: Any) -> Any:
        return self.sock.getsockopt(*args)

    def wants_write(self, queued: bool) -> bool:
        """Whether the client should wait for writability: ciphertext is pending, or requests
        are queued and the handshake no longer waits for the server."""
        return bool(self._out) or (queued and self.handshake_done)

    def has_pending_output(self) -> bool:
        return bool(self._out)

    # ---------------------------------------------------------------- I/O
    def _pump_out(self) -> None:
        """Move OpenSSL's ciphertext to the socket as far as it takes it."""
        pending = self._out_bio.read()
        if pending:
            self._out += pending
        while self._out:
            try:
                n = self.sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                return
            del self._out[:n]

    def flush_output(self) -> None:
        self._pump_out()

    def _pump_in(self) -> bool:
        """Read what the socket has into OpenSSL; False at the peer's end of stream."""
        while True:
            try:
                data = self.sock.recv(_READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                return True
            if not data:
                self._in.write_eof()
                return False
            self._in.write(data)
            if len(data) < _READ_CHUNK:
                return True

    def _handshake(self) -> None:
        """Advance the handshake; BlockingIOError while it waits for the network."""
        if self.handshake_done:
            return
        try:
            self._ssl.do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            self._pump_out()
            raise BlockingIOError("TLS handshake in progress") from None
        except ssl.SSLError as exc:
            raise OSError(f"TLS handshake failed: {exc}") from exc
        self.handshake_done = True
        self._pump_out()

    def sendmsg(self, views: List[memoryview]) -> int:
        """Encrypt up to 64 KiB of the parts; returns the plaintext bytes taken. Takes nothing
        while earlier ciphertext still waits for the socket."""
        self._pump_out()
        if self._out:
            raise BlockingIOError("TLS output pending")
        if not self.handshake_done:
            self._pump_in()
            self._handshake()
        chunk: Any
        if len(views) == 1 or views[0].nbytes >= _RECORD_PLAINTEXT:
            chunk = views[0][:_RECORD_PLAINTEXT]
        else:
            parts, size = [], 0
            for v in views:
                if size >= _RECORD_PLAINTEXT:
                    break
                part = v[: _RECORD_PLAINTEXT - size]
                parts.append(part)
                size += part.nbytes
            chunk = b"".join(parts)
        try:
            n = self._ssl.write(chunk)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            self._pump_out()
            raise BlockingIOError("TLS renegotiation in progress") from None
        except ssl.SSLError as exc:
            raise OSError(f"TLS write failed: {exc}") from exc
        self._pump_out()
        return int(n)

    def recv(self, n: int) -> bytes:
        """Decrypted bytes, as many as are there (up to ``n``); b"" at the end of the stream;
        BlockingIOError when nothing is there yet."""
        alive = self._pump_in()
        if not self.handshake_done:
            self._handshake()
        out = bytearray()
        while len(out) < n:
            try:
                data = self._ssl.read(n - len(out))
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                self._eof = True
                break
            except ssl.SSLError as exc:
                raise OSError(f"TLS read failed: {exc}") from exc
            if not data:
                self._eof = True
                break
            out += data
        self._pump_out()  # a read can make OpenSSL answer (key updates, tickets)
        if out:
            return bytes(out)
        if self._eof or not alive:
            return b""
        raise BlockingIOError("no TLS record complete yet")

    def shutdown(self, how: int) -> None:
        try:
            self._ssl.unwrap()  # close_notify
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, ssl.SSLError):
            pass
        self._pump_out()
        self.sock.shutdown(how)

    def close(self) -> None:
        self.sock.close()


def tls_socket_factory(
    context: ssl.SSLContext, tcp_factory: Callable[..., Any]
) -> Callable[..., TlsSocket]:
    """A NetworkClient socket factory: ``tcp_factory``'s connecting socket, with TLS over it."""
    tcp_takes_address = takes_address(tcp_factory)

    def make(
        host: str, port: int, send_buffer: int, recv_buffer: int, address: Optional[str] = None
    ) -> TlsSocket:
        # TCP to the resolved ``address``; the certificate is checked against the ``host`` name
        if address is None or not tcp_takes_address:
            sock = tcp_factory(host, port, send_buffer, recv_buffer)
        else:
            sock = tcp_factory(host, port, send_buffer, recv_buffer, address=address)
        return TlsSocket(sock, context, host)

    make.context = context  # type: ignore[attr-defined]  # the SSLContext every connection uses
    return make


def ssl_context_from_config(
    truststore: Optional[str],
    keystore: Optional[str],
    key_password: Optional[str],
    endpoint_identification: str,
    keyfile: Optional[str] = None,
    crlfile: Optional[str] = None,
    ciphers: Optional[str] = None,
) -> ssl.SSLContext:
    """The client's SSLContext from the Java settings, PEM files only:
    ``ssl.truststore.location`` (CA certificates; the system's when None),
    ``ssl.keystore.location`` (client certificate chain and its private key, for mTLS),
    ``ssl.key.password`` and ``ssl.endpoint.identification.algorithm`` ("https": the broker's
    certificate must name the host we connect to; "": only the chain is checked). kafka-python's
    extras: ``keyfile`` (the private key, when the keystore file holds only the chain),
    ``crlfile`` (a CRL: the broker's certificate must not be revoked by it) and ``ciphers``
    (OpenSSL's cipher list format)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    name = "ssl.truststore.location"
    try:
        if truststore:
            ctx.load_verify_locations(truststore)
        name = "ssl.keystore.location"
        if keyfile and not keystore:
            raise ConfigError(
                "ssl_keyfile: the key of which certificate? give the certificate chain in "
                "ssl_certfile (ssl.keystore.location) too"
            )
        if keystore:
            ctx.load_cert_chain(keystore, keyfile or None, key_password)
        name = "ssl_crlfile"
        if crlfile:
            ctx.load_verify_locations(crlfile)
            ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{name}: cannot load the PEM file: {exc}") from exc
    if ciphers:
        try:
            ctx.set_ciphers(ciphers)
        except ssl.SSLError as exc:
            raise ConfigError(
                f"ssl_ciphers: OpenSSL selects no cipher from {ciphers!r} ({exc})"
            ) from exc
    if endpoint_identification == "https":
        ctx.check_hostname = True
    elif endpoint_identification == "":
        ctx.check_hostname = False
    else:
        raise ConfigError(
            "ssl.endpoint.identification.algorithm: expected 'https' or '', got "
            f"{endpoint_identification!r}"
        )
    return ctx
