"""SaslClientAuthenticator's state machine, fed the answers a broker gives (Java's
SaslClientAuthenticatorTest, in spirit): versions chosen from ApiVersions, the exchange, the
refusals and their messages, bare tokens after a v0 handshake, KIP-368 re-authentication."""

from __future__ import annotations

import random

import pytest

from cproducer import errors
from cproducer.protocol import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from cproducer.security.sasl_authenticator import (
    COMPLETE,
    FAILED,
    SaslClientAuthenticator,
    SaslRawToken,
)
from cproducer.security.sasl_client import OAuthBearerClient, PlainClient, ScramClient

VERSIONS = {18: (0, 3), 17: (0, 1), 36: (0, 2)}


def plain(node: int = 1, seed: int = 0) -> SaslClientAuthenticator:
    return SaslClientAuthenticator(
        "PLAIN", lambda: PlainClient("alice", "pw"), node, random.Random(seed)
    )


def ok(lifetime_ms: int = 0, auth_bytes: bytes = b"") -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(0, None, auth_bytes, lifetime_ms)


def test_plain_exchange_uses_the_highest_versions_both_speak() -> None:
    a = plain()
    request, version = a.begin({**VERSIONS, 36: (0, 7)}, 1000)
    assert isinstance(request, SaslHandshakeRequest) and request.mechanism == "PLAIN"
    assert version == 1
    request, version = a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 1001)
    assert isinstance(request, SaslAuthenticateRequest) and version == 2  # ours is 0-2
    assert request.auth_bytes == b"\0alice\0pw"
    assert a.on_response(ok(), 1002) is None
    assert a.state == COMPLETE and a.reauthenticate_at_ms is None  # no session lifetime


def test_scram_takes_two_round_trips() -> None:
    a = SaslClientAuthenticator(
        "SCRAM-SHA-256",
        lambda: ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO"),
        0,
    )
    a.begin(VERSIONS, 0)
    first, _ = a.on_response(SaslHandshakeResponse(0, ["SCRAM-SHA-256"]), 0)
    assert first.auth_bytes == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final, _ = a.on_response(ok(auth_bytes=server_first), 0)
    assert final.auth_bytes.startswith(b"c=biws,")
    assert (
        a.on_response(ok(auth_bytes=b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="), 0) is None
    )
    assert a.state == COMPLETE


def test_an_unsupported_mechanism_names_the_brokers_enabled_ones() -> None:
    a = plain(node=3)
    a.begin(VERSIONS, 0)
    with pytest.raises(errors.UnsupportedSaslMechanismError) as info:
        a.on_response(SaslHandshakeResponse(33, ["SCRAM-SHA-512", "OAUTHBEARER"]), 0)
    assert str(info.value).endswith(
        "node 3 does not enable SASL mechanism PLAIN; its enabled mechanisms: SCRAM-SHA-512, "
        "OAUTHBEARER"
    )
    assert isinstance(info.value, errors.AuthenticationError) and a.state == FAILED


def test_a_refusal_carries_the_mechanism_and_the_brokers_message() -> None:
    a = plain(node=2)
    a.begin(VERSIONS, 0)
    a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 0)
    refusal = SaslAuthenticateResponse(58, "Invalid username or password", b"", 0)
    with pytest.raises(errors.SaslAuthenticationError) as info:
        a.on_response(refusal, 0)
    assert "PLAIN authentication with node 2 failed: Invalid username or password" in str(
        info.value
    )
    assert info.value.errno == 58 and errors.SaslAuthenticationFailedError is type(info.value)
    assert "pw" not in str(info.value).replace("password", "")


def test_a_handshake_refused_by_a_listener_without_sasl_says_so() -> None:
    """Kafka's PLAINTEXT and SSL listeners offer SaslHandshake too, and answer it with
    ILLEGAL_SASL_STATE and no mechanisms: the error names the mechanism and the empty list, as
    Java's ("Unexpected handshake request with client mechanism PLAIN, enabled mechanisms are
    []")."""
    a = plain(node=4)
    a.begin(VERSIONS, 0)
    with pytest.raises(errors.IllegalSaslStateError) as info:
        a.on_response(SaslHandshakeResponse(34, []), 0)
    assert str(info.value).endswith(
        "PLAIN authentication with node 4 failed: the SaslHandshake was refused; its enabled "
        "mechanisms: none (not a SASL listener? check security.protocol and the port)"
    )
    assert a.state == FAILED
    b = plain()
    b.begin(VERSIONS, 0)
    with pytest.raises(errors.IllegalSaslStateError, match="its enabled mechanisms: PLAIN$"):
        b.on_response(SaslHandshakeResponse(34, ["PLAIN"]), 0)


def test_an_oauthbearer_refusal_states_the_brokers_status_once() -> None:
    """Kafka answers a bad token with an error challenge, then refuses with the same status
    as its error message."""
    a = SaslClientAuthenticator("OAUTHBEARER", lambda: OAuthBearerClient(lambda: "t.o.", {}), 5)
    a.begin(VERSIONS, 0)
    a.on_response(SaslHandshakeResponse(0, ["OAUTHBEARER"]), 0)
    status = '{"status":"invalid_token"}'
    ack, _ = a.on_response(ok(auth_bytes=status.encode()), 0)
    assert ack.auth_bytes == b"\x01"
    with pytest.raises(errors.SaslAuthenticationError) as info:
        a.on_response(SaslAuthenticateResponse(58, status, b"", 0), 0)
    assert str(info.value).endswith(f"OAUTHBEARER authentication with node 5 failed: {status}")
    # a broker whose message is another text: the status is added to it
    b = SaslClientAuthenticator("OAUTHBEARER", lambda: OAuthBearerClient(lambda: "t.o.", {}), 5)
    b.begin(VERSIONS, 0)
    b.on_response(SaslHandshakeResponse(0, ["OAUTHBEARER"]), 0)
    b.on_response(ok(auth_bytes=status.encode()), 0)
    with pytest.raises(errors.SaslAuthenticationError) as info:
        b.on_response(SaslAuthenticateResponse(58, "token refused", b"", 0), 0)
    assert str(info.value).endswith(f"failed: token refused (server status {status})")


def test_a_broker_without_sasl_handshake_is_not_a_sasl_listener() -> None:
    with pytest.raises(errors.IllegalSaslStateError, match="not a SASL listener"):
        plain().begin({18: (0, 3), 3: (0, 12)}, 0)


def test_bare_tokens_after_a_v0_handshake() -> None:
    a = plain()
    request, version = a.begin({18: (0, 3), 17: (0, 0)}, 0)  # a broker before 1.0
    assert version == 0 and a.raw
    token, _ = a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 0)
    assert isinstance(token, SaslRawToken) and token.auth_bytes == b"\0alice\0pw"
    assert a.on_response(b"", 0) is None and a.state == COMPLETE  # the broker's empty frame
    b = plain()
    b.begin({18: (0, 3), 17: (0, 0)}, 0)
    b.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 0)
    lost = b.connection_lost()  # how such a broker refuses
    assert isinstance(lost, errors.SaslAuthenticationError) and "no reason" in str(lost)


def test_reauthentication_falls_in_85_to_95_percent_of_the_session() -> None:
    at = []
    for seed in range(200):
        a = plain(seed=seed)
        a.begin(VERSIONS, 10_000)
        a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 10_001)
        a.on_response(ok(lifetime_ms=100_000), 10_002)
        assert a.reauthenticate_at_ms is not None
        at.append(a.reauthenticate_at_ms - 10_000)
    assert 85_000 <= min(at) < 86_000 and 94_000 < max(at) <= 95_000
    # and again on the same connection, without ApiVersions, with fresh credentials
    request, version = a.begin_reauthentication(200_000)
    assert isinstance(request, SaslHandshakeRequest) and version == 1
    a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 200_001)
    assert a.on_response(ok(lifetime_ms=50_000), 200_002) is None
    assert a.authentications == 2 and 200_000 + 42_500 <= a.reauthenticate_at_ms <= 247_500


def test_a_failed_reauthentication_says_so() -> None:
    a = plain()
    a.begin(VERSIONS, 0)
    a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 0)
    a.on_response(ok(lifetime_ms=1000), 0)
    a.begin_reauthentication(900)
    a.on_response(SaslHandshakeResponse(0, ["PLAIN"]), 900)
    with pytest.raises(errors.SaslAuthenticationError, match="PLAIN re-authentication with node"):
        a.on_response(SaslAuthenticateResponse(58, "user removed", b"", 0), 901)
