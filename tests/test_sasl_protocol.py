"""SaslHandshake and SaslAuthenticate codecs against kafka-python's schema-generated classes."""

from __future__ import annotations

import random
from typing import Any

import pytest
from kafka.protocol import sasl as k_sasl

from cproducer.errors import CorruptResponseError
from cproducer.protocol import (
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    decode_response,
    decode_response_header,
    is_flexible,
)
from tests.test_protocol_primitives import _decode_ours, _ours, _their_response, _theirs


@pytest.mark.parametrize("version", range(0, 2))
def test_sasl_handshake_request_bytes_match_peer(version: int) -> None:
    peer = k_sasl.SaslHandshakeRequest(mechanism="SCRAM-SHA-512")
    assert _ours(SaslHandshakeRequest("SCRAM-SHA-512"), version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 2))
def test_sasl_handshake_response_from_peer(version: int) -> None:
    peer = k_sasl.SaslHandshakeResponse(error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-256"])
    resp = _decode_ours(SaslHandshakeRequest(), version, _their_response(peer, version))
    assert (resp.error_code, resp.mechanisms) == (33, ["PLAIN", "SCRAM-SHA-256"])


@pytest.mark.parametrize("version", range(0, 3))
@pytest.mark.parametrize("token", [b"", b"n,,n=user,r=abc", bytes(range(256)) * 3])
def test_sasl_authenticate_request_bytes_match_peer(version: int, token: bytes) -> None:
    peer = k_sasl.SaslAuthenticateRequest(auth_bytes=token)
    assert _ours(SaslAuthenticateRequest(token), version) == _theirs(peer, version)


@pytest.mark.parametrize("version", range(0, 3))
@pytest.mark.parametrize("message", [None, "Authentication failed: Invalid username or password"])
def test_sasl_authenticate_response_from_peer(version: int, message: Any) -> None:
    peer = k_sasl.SaslAuthenticateResponse(
        error_code=58 if message else 0,
        error_message=message,
        auth_bytes=b"v=6rriTRBi23WpRR",
        session_lifetime_ms=3_600_000,
    )
    resp = _decode_ours(SaslAuthenticateRequest(), version, _their_response(peer, version))
    assert (resp.error_code, resp.error_message) == (58 if message else 0, message)
    assert resp.auth_bytes == b"v=6rriTRBi23WpRR"
    assert resp.session_lifetime_ms == (3_600_000 if version >= 1 else 0)  # v1+: KIP-368


def test_a_sasl_authenticate_request_never_shows_its_token() -> None:
    secret = b"\0alice\0hunter2"
    assert "hunter2" not in repr(SaslAuthenticateRequest(secret))
    peer = k_sasl.SaslAuthenticateResponse(
        error_code=0, error_message=None, auth_bytes=b"token-xyz", session_lifetime_ms=0
    )
    resp = _decode_ours(SaslAuthenticateRequest(), 2, _their_response(peer, 2))
    assert "token-xyz" not in repr(resp)


def _peer_frames() -> Any:
    for v in range(0, 2):
        peer = k_sasl.SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"])
        yield SaslHandshakeRequest(), v, _their_response(peer, v)
    for v in range(0, 3):
        peer = k_sasl.SaslAuthenticateResponse(
            error_code=0, error_message="m", auth_bytes=b"abc", session_lifetime_ms=5
        )
        yield SaslAuthenticateRequest(), v, _their_response(peer, v)


def test_truncated_or_corrupted_sasl_answers_raise_only_corrupt_response() -> None:
    rng = random.Random(11)
    for req, version, frame in _peer_frames():
        for cut in range(len(frame)):
            with pytest.raises(CorruptResponseError):
                _decode_ours(req, version, frame[:cut])
        for _ in range(200):
            bad = bytearray(frame)
            bad[rng.randrange(4, len(bad))] = rng.randrange(256)
            flexible = is_flexible(type(req), version)
            try:
                _cid, body = decode_response_header(req.API_KEY, flexible, memoryview(bytes(bad)))
                decode_response(req, version, body)
            except CorruptResponseError as exc:
                assert str(exc)
