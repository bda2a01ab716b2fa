"""The SASL mechanisms' client sides: SCRAM against the RFC test vectors and scramp's server (an
independent implementation), PLAIN and OAUTHBEARER messages, and that no secret shows."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from scramp import ScramException, ScramMechanism

from cproducer import errors
from cproducer.security.oauthbearer import (
    ClientCredentialsTokenProvider,
    OAuthBearerToken,
    UnsecuredTokenProvider,
    jwt_claims,
    user_token_provider,
)
from cproducer.security.sasl_client import OAuthBearerClient, PlainClient, ScramClient


def test_scram_sha_256_matches_rfc_7677_section_3() -> None:
    c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert c.initial_response() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert c.evaluate_challenge(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert not c.is_complete()
    assert c.evaluate_challenge(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert c.is_complete()


def test_scram_exchange_matches_rfc_5802_section_5_sha1_example() -> None:
    c = ScramClient("SCRAM-SHA-1", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL")
    assert c.initial_response() == b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL"
    final = c.evaluate_challenge(
        b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"
    )
    assert final == (
        b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="
    )
    assert c.evaluate_challenge(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=") is None and c.is_complete()


def _scramp_exchange(mechanism: str, user: str, stored_password: str, password: str) -> Any:
    """Our client against scramp's server; returns the client (complete) or raises."""
    info = ScramMechanism(mechanism).make_auth_info(stored_password, 4096)
    server = ScramMechanism(mechanism).make_server(lambda u: info if u == user else None)
    client = ScramClient(mechanism, user, password)
    server.set_client_first(client.initial_response().decode())
    final = client.evaluate_challenge(server.get_server_first().encode())
    assert final is not None
    server.set_client_final(final.decode())
    assert client.evaluate_challenge(server.get_server_final().encode()) is None
    return client


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_against_an_independent_server(mechanism: str) -> None:
    assert _scramp_exchange(mechanism, "alice", "s3cret-ü", "s3cret-ü").is_complete()
    with pytest.raises(ScramException):  # the server checks the proof
        _scramp_exchange(mechanism, "alice", "s3cret", "wrong")


def test_scram_usernames_escape_comma_and_equals() -> None:
    c = ScramClient("SCRAM-SHA-256", "a,b=c", "p", nonce="abc")
    assert c.initial_response() == b"n,,n=a=2Cb=3Dc,r=abc"


def test_scram_client_refuses_a_bad_server() -> None:
    def first(server_first: bytes) -> ScramClient:
        c = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
        c.initial_response()
        c.evaluate_challenge(server_first)
        return c

    with pytest.raises(errors.SaslAuthenticationError, match="does not extend the client nonce"):
        first(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(errors.SaslAuthenticationError, match="100 iterations"):
        first(b"r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100")
    with pytest.raises(errors.SaslAuthenticationError, match="malformed server-first"):
        first(b"garbage")
    c = first(b"r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(errors.SaslAuthenticationError, match="server signature is wrong"):
        c.evaluate_challenge(b"v=" + base64.b64encode(b"x" * 32))
    c = first(b"r=abc123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(errors.SaslAuthenticationError, match="refused the proof: invalid-proof"):
        c.evaluate_challenge(b"e=invalid-proof")


def test_plain_message_is_rfc_4616_without_authzid() -> None:
    c = PlainClient("alice", "hunter2")
    assert c.initial_response() == b"\0alice\0hunter2" and c.is_complete()
    assert "hunter2" not in repr(c)


def test_oauthbearer_message_and_error_challenge() -> None:
    c = OAuthBearerClient(lambda: "tok.en.x", {"logicalCluster": "lkc-1"})
    assert c.initial_response() == b"n,,\x01auth=Bearer tok.en.x\x01logicalCluster=lkc-1\x01\x01"
    assert c.evaluate_challenge(b"") is None and c.is_complete()
    c = OAuthBearerClient(lambda: "tok", {})
    c.initial_response()
    assert c.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"  # RFC 7628 3.2.3
    assert not c.is_complete() and c.server_error == '{"status":"invalid_token"}'
    assert "tok" not in repr(c)


class _KafkaPythonStyle:
    """kafka-python's AbstractTokenProvider shape: token(), optional extensions()."""

    def token(self) -> str:
        return "abc"

    def extensions(self) -> Any:
        return {"traceId": "t-1"}


def test_token_providers_in_every_accepted_form() -> None:
    assert user_token_provider(lambda: "abc")() == OAuthBearerToken("abc")
    by_object = user_token_provider(_KafkaPythonStyle())()
    assert (by_object.value, dict(by_object.extensions)) == ("abc", {"traceId": "t-1"})
    # (token, expiry): milliseconds as MSKAuthTokenProvider returns it, seconds as oauth_cb
    assert user_token_provider(lambda: ("abc", 1_900_000_000_123))().expiry_ms == 1_900_000_000_123
    assert user_token_provider(lambda: ("abc", 1_900_000_000.5))().expiry_ms == 1_900_000_000_500
    with pytest.raises(errors.ConfigError, match="sasl_oauth_token_provider"):
        user_token_provider("a token string")
    with pytest.raises(errors.SaslAuthenticationError, match="must return a str"):
        user_token_provider(lambda: 42)()

    def failing() -> str:
        raise RuntimeError("secret-in-message")

    with pytest.raises(errors.SaslAuthenticationError) as info:
        user_token_provider(failing)()
    assert "RuntimeError" in str(info.value) and "secret-in-message" not in str(info.value)


def test_unsecured_tokens_as_javas_unsecured_login() -> None:
    now = [1_800_000_000_000]
    p = UnsecuredTokenProvider(
        {
            "unsecuredLoginStringClaim_sub": "alice",
            "unsecuredLoginListClaim_scope": ",read,write",
            "unsecuredLoginLifetimeSeconds": "120",
            "unsecuredLoginExtension_traceId": "t",
        },
        time_ms=lambda: now[0],
    )
    token = p.fetch()
    header = json.loads(base64.urlsafe_b64decode(token.value.split(".")[0] + "=="))
    assert header == {"alg": "none"} and token.value.endswith(".")
    claims = jwt_claims(token.value)
    assert claims["sub"] == "alice" and claims["scope"] == ["read", "write"]
    assert claims["exp"] - claims["iat"] == 120 and token.expiry_ms == now[0] + 120_000
    assert dict(token.extensions) == {"traceId": "t"}
    with pytest.raises(errors.ConfigError, match="unsecuredLoginStringClaim_sub"):
        UnsecuredTokenProvider({"unsecuredLoginLifetimeSeconds": "60"})


def test_a_file_token_endpoint_reads_the_token_file(tmp_path: Any) -> None:
    """Java's file-based sasl.oauthbearer.token.endpoint.url: the file holds the JWT."""
    token = UnsecuredTokenProvider({"unsecuredLoginStringClaim_sub": "svc"}).fetch().value
    path = tmp_path / "token.jwt"
    path.write_text(token + "\n")
    provider = ClientCredentialsTokenProvider(path.as_uri(), None, None)
    got = provider.fetch()
    assert got.value == token and got.expiry_ms == int(jwt_claims(token)["exp"] * 1000)
    assert token not in repr(provider)
    path.unlink()
    with pytest.raises(errors.SaslAuthenticationError, match="cannot read the token file"):
        provider.fetch()
