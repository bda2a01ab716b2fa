"""The client side of each SASL mechanism (Java's ``SaslClient`` implementations):
PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677) and OAUTHBEARER (RFC 7628).

A mechanism client is made for one authentication and used from one thread:
``initial_response()`` gives the first client message, ``evaluate_challenge(server_message)``
the next one (``None``: nothing more to send), ``is_complete()`` says whether the exchange is
over on the client's side. A failure is an ``AuthenticationError`` whose message names the
mechanism; no message ever contains a password, a proof or a token.

SCRAM is written here with ``hashlib``/``hmac`` rather than taken from a SCRAM library, because
Kafka's SCRAM differs from a generic one in one respect that matters for interoperation: Kafka's
``ScramFormatter`` does not apply SASLprep to the username or the password (it only escapes ','
and '=' in the name), and the credentials stored on the broker were derived that way.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Callable, Dict, Optional

from cproducer import errors

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
OAUTHBEARER = "OAUTHBEARER"
MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)

# hash of each SCRAM mechanism; SHA-1 is RFC 5802's own example, kept for checking the exchange
# against it (Kafka offers only the SHA-2 ones)
_SCRAM_HASHES = {"SCRAM-SHA-1": "sha1", SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
# Kafka's ScramMechanism.minIterations: a server asking for fewer is refused
SCRAM_MIN_ITERATIONS = 4096


class SaslMechanismClient:
    mechanism = ""

    def initial_response(self) -> bytes:
        raise NotImplementedError

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        raise NotImplementedError

    def is_complete(self) -> bool:
        raise NotImplementedError

    def failure(self, detail: str) -> errors.SaslAuthenticationError:
        return errors.SaslAuthenticationError(f"{self.mechanism}: {detail}")


class PlainClient(SaslMechanismClient):
    """RFC 4616: one message, ``authzid NUL authcid NUL passwd`` (no authzid, as Kafka's)."""

    mechanism = PLAIN

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password
        self._sent = False

    def initial_response(self) -> bytes:
        self._sent = True
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        if challenge:
            raise self.failure("the server sent a challenge, PLAIN has none")
        return None

    def is_complete(self) -> bool:
        return self._sent

    def __repr__(self) -> str:
        return f"PlainClient(username={self._username!r})"


def _saslname(username: str) -> str:
    """RFC 5802 section 5.1: ',' and '=' in a name are escaped (and nothing else is done)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ValueError(f"malformed attribute {part[:1]!r}...")
        out[part[0]] = part[2:]
    return out


class ScramClient(SaslMechanismClient):
    """RFC 5802 client: client-first, server-first, client-final (with the proof),
    server-final (checked against the server signature we expect)."""

    def __init__(
        self, mechanism: str, username: str, password: str, nonce: Optional[str] = None
    ) -> None:
        if mechanism not in _SCRAM_HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism!r}")
        self.mechanism = mechanism
        self._hash = _SCRAM_HASHES[mechanism]
        self._username = username
        self._password = password
        # printable, no ',' (RFC 5802's c-nonce); 24 random bytes as Java's 130 random bits
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = ""
        self._server_signature = b""
        self._state = "initial"

    def __repr__(self) -> str:
        return f"ScramClient({self.mechanism}, username={self._username!r}, state={self._state})"

    def initial_response(self) -> bytes:
        self._client_first_bare = f"n={_saslname(self._username)},r={self._nonce}"
        self._state = "client_first_sent"
        return ("n,," + self._client_first_bare).encode()

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        if self._state == "client_first_sent":
            return self._client_final(challenge)
        if self._state == "client_final_sent":
            self._check_server_final(challenge)
            return None
        raise self.failure(f"unexpected server message in state {self._state}")

    def _client_final(self, server_first_bytes: bytes) -> bytes:
        try:
            server_first = server_first_bytes.decode()
            attrs = _attributes(server_first)
            if "m" in attrs:
                raise self.failure("the server requires an extension we do not know (m=)")
            nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        except errors.SaslAuthenticationError:
            raise
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            raise self.failure(f"malformed server-first message ({exc})") from None
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise self.failure("the server nonce does not extend the client nonce")
        if iterations < SCRAM_MIN_ITERATIONS:
            raise self.failure(
                f"the server asks for {iterations} iterations, fewer than {SCRAM_MIN_ITERATIONS}"
            )
        salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"  # biws: base64 of the GS2 header "n,,"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        self._state = "client_final_sent"
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _check_server_final(self, server_final: bytes) -> None:
        try:
            attrs = _attributes(server_final.decode())
        except (ValueError, UnicodeDecodeError) as exc:
            raise self.failure(f"malformed server-final message ({exc})") from None
        if "e" in attrs:
            raise self.failure(f"the server refused the proof: {attrs['e']}")
        try:
            verifier = base64.b64decode(attrs["v"], validate=True)
        except (KeyError, ValueError):
            raise self.failure("the server-final message has no valid verifier") from None
        if not hmac.compare_digest(verifier, self._server_signature):
            raise self.failure(
                "the server signature is wrong: the broker does not know the password"
            )
        self._state = "complete"

    def is_complete(self) -> bool:
        return self._state == "complete"


class OAuthBearerClient(SaslMechanismClient):
    """RFC 7628 client: one message ``n,,^Aauth=Bearer <token>[^Akey=value...]^A^A``. An
    error challenge (a JSON status) is answered with ``^A``, after which the server fails the
    exchange; the status is kept for the error message."""

    mechanism = OAUTHBEARER
    _SEP = "\x01"

    def __init__(self, token: Callable[[], str], extensions: Dict[str, str]) -> None:
        self._token = token
        self._extensions = extensions
        self._state = "initial"
        self.server_error: Optional[str] = None

    def __repr__(self) -> str:
        return f"OAuthBearerClient(extensions={sorted(self._extensions)}, state={self._state})"

    def initial_response(self) -> bytes:
        sep = self._SEP
        ext = "".join(f"{sep}{k}={v}" for k, v in self._extensions.items())
        self._state = "sent"
        return f"n,,{sep}auth=Bearer {self._token()}{ext}{sep}{sep}".encode()

    def evaluate_challenge(self, challenge: bytes) -> Optional[bytes]:
        if self._state == "sent":
            if not challenge:
                self._state = "complete"
                return None
            self.server_error = challenge.decode("utf-8", "replace")
            self._state = "error_acknowledged"
            return self._SEP.encode()
        raise self.failure(f"unexpected server message after the error {self.server_error}")

    def is_complete(self) -> bool:
        return self._state == "complete"
