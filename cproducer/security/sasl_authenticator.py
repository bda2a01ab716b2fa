"""SaslClientAuthenticator: SASL authentication of one connection (Java's
``SaslClientAuthenticator``), a state machine the ``NetworkClient`` feeds.

After the connection's ApiVersions exchange the client asks ``begin()`` for the first request
and passes every answer to ``on_response()``, which returns the next request or ``None`` once
the broker has accepted the client:

    SEND_HANDSHAKE ─ SaslHandshake(mechanism) ─► RECEIVE_HANDSHAKE
        ─ first client message ─► INTERMEDIATE ⇄ (challenge → response) ─► COMPLETE
    any refusal ─► FAILED (the answer raises an AuthenticationError)

The tokens travel in SaslAuthenticate requests (v0-2) when the broker has that API; after a v0
handshake with a broker that lacks it (Kafka before 1.0) they go as bare size-prefixed frames
(``SaslRawToken``) and the broker answers each with one bare frame, closing the connection on a
refusal. With SaslAuthenticate v1+ the broker states the session's lifetime (KIP-368);
``reauthenticate_at_ms`` is then 85-95% of it after the authentication began (Java's random
window), and ``begin_reauthentication()`` runs the handshake and the exchange again on the open
connection (no ApiVersions), with fresh credentials (a new OAUTHBEARER token).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from cproducer import errors
from cproducer.protocol.sasl_authenticate import SaslAuthenticateRequest
from cproducer.protocol.sasl_handshake import SaslHandshakeRequest

log = logging.getLogger("cproducer.security.sasl")

SEND_HANDSHAKE, RECEIVE_HANDSHAKE, INTERMEDIATE, COMPLETE, FAILED = (
    "send_handshake",
    "receive_handshake",
    "intermediate",
    "complete",
    "failed",
)
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
# KIP-368: re-authenticate at a random point in [85%, 95%] of the session's lifetime
REAUTH_WINDOW = (0.85, 0.95)


@dataclass
class SaslRawToken:
    """A SASL token sent as a bare size-prefixed frame (after a v0 handshake): no request
    header, and the answer is a bare frame too."""

    API_KEY = -1
    FIRST_FLEXIBLE_VERSION = 2**15
    auth_bytes: bytes = field(default=b"", repr=False)


Request = Tuple[Any, int]  # (request, version)


class SaslClientAuthenticator:
    def __init__(
        self,
        mechanism: str,
        new_client: Callable[[], Any],
        node_id: int,
        rng: Optional[random.Random] = None,
    ) -> None:
        self.mechanism = mechanism
        self._new_client = new_client
        self.node_id = node_id
        self._rng = rng or random.Random()
        self.state = SEND_HANDSHAKE
        self._client: Any = None
        self.handshake_version = 1
        self.authenticate_version = -1  # -1: bare tokens
        self.session_lifetime_ms = 0
        self.reauthenticate_at_ms: Optional[int] = None
        self.reauthenticating = False
        self.authentications = 0
        self._started_ms = 0

    def __repr__(self) -> str:
        return (
            f"SaslClientAuthenticator(node={self.node_id}, mechanism={self.mechanism}, "
            f"state={self.state})"
        )

    @property
    def raw(self) -> bool:
        return self.authenticate_version < 0

    # ---------------------------------------------------------------- the exchange
    def begin(self, api_versions: Dict[int, Tuple[int, int]], now_ms: int) -> Request:
        """The SaslHandshake to send, from the versions the broker's ApiVersions listed."""
        handshake = api_versions.get(SaslHandshakeRequest.API_KEY)
        if handshake is None:
            raise self._fail(
                errors.IllegalSaslStateError(
                    f"node {self.node_id} does not offer SaslHandshake in its ApiVersions: "
                    "it is not a SASL listener (check security.protocol and the port)"
                )
            )
        self.handshake_version = min(handshake[1], SaslHandshakeRequest.MAX_VERSION)
        authenticate = api_versions.get(SaslAuthenticateRequest.API_KEY)
        if self.handshake_version >= 1 and authenticate is not None:
            self.authenticate_version = min(authenticate[1], SaslAuthenticateRequest.MAX_VERSION)
        else:
            self.authenticate_version = -1
        return self._handshake(now_ms)

    def begin_reauthentication(self, now_ms: int) -> Request:
        """KIP-368: authenticate again on the open connection (same versions)."""
        if self.state != COMPLETE:
            raise errors.IllegalStateError(f"re-authentication from state {self.state}")
        self.reauthenticating = True
        return self._handshake(now_ms)

    def _handshake(self, now_ms: int) -> Request:
        self._started_ms = now_ms
        self._client = None
        self.state = RECEIVE_HANDSHAKE
        return SaslHandshakeRequest(self.mechanism), self.handshake_version

    def on_response(self, response: Any, now_ms: int) -> Optional[Request]:
        """The next request, or None when the broker accepted us (state COMPLETE). A refusal
        raises (state FAILED)."""
        if self.state == RECEIVE_HANDSHAKE:
            return self._on_handshake(response)
        if self.state != INTERMEDIATE:
            raise self._fail(
                errors.IllegalSaslStateError(
                    f"{self.mechanism}: an answer from node {self.node_id} in state {self.state}"
                )
            )
        if self.raw:
            challenge: bytes = response
        else:
            if response.error_code != 0:
                raise self._fail(self._refusal(response.error_code, response.error_message))
            challenge = response.auth_bytes
            self.session_lifetime_ms = response.session_lifetime_ms
        try:
            token = self._client.evaluate_challenge(challenge)
        except errors.KafkaError as exc:
            raise self._fail(exc) from None
        if token is not None:
            return self._token_request(token)
        if not self._client.is_complete():
            raise self._fail(
                errors.IllegalSaslStateError(
                    f"{self.mechanism}: node {self.node_id} ended the exchange early"
                )
            )
        self._complete(now_ms)
        return None

    def _on_handshake(self, response: Any) -> Request:
        if response.error_code == UNSUPPORTED_SASL_MECHANISM:
            enabled = ", ".join(response.mechanisms) or "none"
            raise self._fail(
                errors.UnsupportedSaslMechanismError(
                    f"node {self.node_id} does not enable SASL mechanism {self.mechanism}; its "
                    f"enabled mechanisms: {enabled}"
                )
            )
        if response.error_code != 0:
            # a listener without SASL (Kafka's PLAINTEXT and SSL ones) answers ILLEGAL_SASL_STATE
            # with no mechanisms; Java's message names the mechanism and the enabled list too
            enabled = ", ".join(response.mechanisms) or "none"
            said = f"the SaslHandshake was refused; its enabled mechanisms: {enabled}"
            if not response.mechanisms:
                said += " (not a SASL listener? check security.protocol and the port)"
            raise self._fail(self._refusal(response.error_code, said))
        try:
            self._client = self._new_client()
            token = self._client.initial_response()
        except errors.KafkaError as exc:
            raise self._fail(exc) from None
        self.state = INTERMEDIATE
        return self._token_request(token)

    def _token_request(self, token: bytes) -> Request:
        if self.raw:
            return SaslRawToken(token), 0
        return SaslAuthenticateRequest(token), self.authenticate_version

    def _complete(self, now_ms: int) -> None:
        self.state = COMPLETE
        self.authentications += 1
        self._client = None  # it holds the credentials of this exchange; nothing more to do
        self.reauthenticating = False
        if self.session_lifetime_ms > 0:
            share = self._rng.uniform(*REAUTH_WINDOW)
            self.reauthenticate_at_ms = self._started_ms + int(self.session_lifetime_ms * share)
        else:
            self.reauthenticate_at_ms = None
        log.debug(
            "node %s: SASL %s authentication complete (session lifetime %s ms)",
            self.node_id,
            self.mechanism,
            self.session_lifetime_ms or "unlimited",
        )

    # ---------------------------------------------------------------- failures
    def _refusal(self, code: int, message: Optional[str]) -> errors.KafkaError:
        said = message or "no reason given"
        what = "re-authentication" if self.reauthenticating else "authentication"
        text = f"{self.mechanism} {what} with node {self.node_id} failed: {said}"
        server_error = getattr(self._client, "server_error", None)
        if server_error and server_error not in said:
            # (Kafka's OAUTHBEARER refusal message is the status itself: said once)
            text += f" (server status {server_error})"
        if code == SASL_AUTHENTICATION_FAILED:
            return errors.SaslAuthenticationError(text)
        if code == ILLEGAL_SASL_STATE:
            return errors.IllegalSaslStateError(text)
        if code == UNSUPPORTED_SASL_MECHANISM:
            return errors.UnsupportedSaslMechanismError(text)
        err = errors.exception_for(code, text)
        return err if err is not None else errors.SaslAuthenticationError(text)

    def _fail(self, exc: errors.KafkaError) -> errors.KafkaError:
        self.state = FAILED
        self._client = None
        if not isinstance(exc, errors.AuthenticationError):
            wrapped = errors.SaslAuthenticationError(f"{self.mechanism}: {exc}")
            wrapped.__cause__ = exc
            return wrapped
        return exc

    def connection_lost(self) -> Optional[errors.KafkaError]:
        """The error for a connection that closed during the exchange, or None for an ordinary
        disconnect: with bare tokens (SaslHandshake v0) a close is how a broker refuses; with
        SaslAuthenticate a refusal comes as an answer, and a close is a network failure (Java
        logs it and reconnects)."""
        if self.raw and self.state == INTERMEDIATE:
            return self._fail(
                errors.SaslAuthenticationError(
                    f"{self.mechanism} authentication with node {self.node_id} failed: the "
                    "broker closed the connection (SaslHandshake v0: it gives no reason)"
                )
            )
        self.state = FAILED
        self._client = None
        return None
