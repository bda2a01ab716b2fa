"""The NetworkClient's default socket factory: a non-blocking TCP socket, connecting (Java's
``Selector.connect`` and ``configureSocketChannel``).

A factory is called with the node's host name and the address to connect to (one of those the
name resolves to, ``network/host_resolver.py``); TLS (``network/tls.py``) or a test proxy that
presents virtual brokers slots in as another factory.
"""

from __future__ import annotations

import errno
import socket
from typing import Any, Optional, Sequence, Tuple

from cproducer.network.host_resolver import default_host_resolver

_NO_DELAY = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


def default_socket_factory(
    host: str,
    port: int,
    send_buffer: Optional[int],
    recv_buffer: Optional[int],
    address: Optional[str] = None,
    socket_options: Optional[Sequence[Tuple[int, int, Any]]] = None,
) -> socket.socket:
    """A non-blocking TCP socket with connect() to ``address`` (an IPv4 or IPv6 address; the
    first one ``host`` resolves to when None) started. ``send_buffer`` / ``recv_buffer``:
    SO_SNDBUF / SO_RCVBUF, left to the OS when -1 or None. ``socket_options``: ``(level,
    option, value)`` triples set before connecting (kafka-python's ``socket_options``; default:
    TCP_NODELAY on)."""
    if address is None:
        address = default_host_resolver(host)[0]
    infos = socket.getaddrinfo(address, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    family, stype, proto, _, addr = infos[0]
    sock = socket.socket(family, stype, proto)
    try:
        sock.setblocking(False)
        for level, option, value in _NO_DELAY if socket_options is None else socket_options:
            sock.setsockopt(level, option, value)
        if send_buffer is not None and send_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        if recv_buffer is not None and recv_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
    except BaseException:
        sock.close()
        raise
    err = sock.connect_ex(addr)
    if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
        sock.close()
        reason = errno.errorcode.get(err, err)
        raise OSError(err, f"connect to {host}:{port} ({address}) failed: {reason}")
    return sock
