"""OAUTHBEARER tokens for the SASL client (Java's ``OAuthBearerLoginCallbackHandler`` family).

A token source is a zero-argument callable returning an ``OAuthBearerToken``; the
authenticator calls it at every authentication and re-authentication. Three kinds:

- ``user_token_provider(obj)``: what the application passes as ``sasl_oauth_token_provider``:
  a callable, or an object with ``token()`` (kafka-python's ``AbstractTokenProvider``, whose
  optional ``extensions()`` gives SASL extensions). Either may return the token string, an
  ``OAuthBearerToken``, or ``(token, expiry)`` with the expiry as epoch time: in milliseconds
  (as aws-msk-iam-sasl-signer-python's ``MSKAuthTokenProvider.generate_auth_token`` returns it)
  or in seconds (as confluent-kafka's ``oauth_cb``); a number above 10**11 is taken as
  milliseconds. The provider is called on the producer's I/O thread: it should return a cached
  token quickly and refresh it itself.
- ``UnsecuredTokenProvider``: Java's default without a callback handler, an unsecured JWT
  (``alg: none``) made from the JAAS options ``unsecuredLoginStringClaim_sub`` and friends; for
  development brokers that accept unsecured tokens.
- ``ClientCredentialsTokenProvider``: OIDC client credentials (RFC 6749 section 4.4) against
  ``sasl.oauthbearer.token.endpoint.url``; the first token is fetched when the producer is made
  (a refusal fails the constructor, as Java's login does), later ones by a refresh thread at
  80-85% of each token's lifetime (Java's ``sasl.login.refresh.window.factor`` 0.8 and
  ``.jitter`` 0.05), so that the I/O thread never waits for the identity provider.

``repr`` of a token or a provider never shows a token or a secret.
"""

from __future__ import annotations

import base64
import json
import logging
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional

from cproducer import errors
from cproducer.security.password import Password, reveal

log = logging.getLogger("cproducer.security.oauthbearer")

REFRESH_WINDOW_FACTOR = 0.8
REFRESH_WINDOW_JITTER = 0.05
RETRY_BACKOFF_MS = 100
RETRY_BACKOFF_MAX_MS = 10000
HTTP_TIMEOUT_S = 10.0
_MS_THRESHOLD = 10**11  # an epoch expiry above this is in milliseconds
# RFC 7628 section 3.1: key = 1*(ALPHA), value = *(VCHAR / SP / HTAB / CR / LF)
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7e \t\r\n]*")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class OAuthBearerToken:
    value: str = field(repr=False)
    expiry_ms: Optional[int] = None  # epoch ms, when known
    extensions: Mapping[str, str] = field(default_factory=dict)


def check_extensions(extensions: Mapping[str, Any], where: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for key, value in extensions.items():
        if not isinstance(key, str) or not _EXTENSION_KEY.fullmatch(key) or key == "auth":
            raise errors.ConfigError(
                f"{where}: SASL extension names are letters only and not 'auth' (RFC 7628), "
                f"got {key!r}"
            )
        if not isinstance(value, str) or not _EXTENSION_VALUE.fullmatch(value):
            raise errors.ConfigError(
                f"{where}: the value of SASL extension {key!r} must be a str of printable "
                "ASCII characters"
            )
        out[key] = value
    return out


def _expiry_ms(expiry: Any) -> Optional[int]:
    if expiry is None:
        return None
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
        raise errors.SaslAuthenticationError(
            "OAUTHBEARER: the token provider returned an expiry that is not a number "
            f"({type(expiry).__name__})"
        )
    return int(expiry) if expiry > _MS_THRESHOLD else int(expiry * 1000)


def user_token_provider(provider: Any) -> Callable[[], OAuthBearerToken]:
    """The token source for ``sasl_oauth_token_provider`` (see the module docstring)."""
    if hasattr(provider, "token") and callable(provider.token):
        get = provider.token
        get_extensions = getattr(provider, "extensions", None)
    elif callable(provider):
        get, get_extensions = provider, None
    else:
        raise errors.ConfigError(
            "sasl_oauth_token_provider: expected a callable returning a token, or an object "
            f"with token() (kafka-python's AbstractTokenProvider), got {type(provider).__name__}"
        )

    def token() -> OAuthBearerToken:
        try:
            got = get()
            extensions = get_extensions() if callable(get_extensions) else {}
        except errors.KafkaError:
            raise
        except Exception as exc:
            # the type only: a provider's own message might quote what it was working with
            raise errors.SaslAuthenticationError(
                f"OAUTHBEARER: the token provider raised {type(exc).__name__}"
            ) from exc
        if isinstance(got, OAuthBearerToken):
            result = got
        elif isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str):
            result = OAuthBearerToken(got[0], _expiry_ms(got[1]))
        elif isinstance(got, str):
            result = OAuthBearerToken(got)
        else:
            raise errors.SaslAuthenticationError(
                "OAUTHBEARER: the token provider must return a str, (str, expiry) or an "
                f"OAuthBearerToken, got {type(got).__name__}"
            )
        if not result.value:
            raise errors.SaslAuthenticationError("OAUTHBEARER: the token provider returned ''")
        if extensions:
            merged = dict(result.extensions)
            merged.update(check_extensions(extensions, "sasl_oauth_token_provider.extensions()"))
            result = OAuthBearerToken(result.value, result.expiry_ms, merged)
        return result

    return token


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_claims(token: str) -> Dict[str, Any]:
    """The claims of a compact JWT (not verified: for its expiry only); {} if it is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except ValueError:
        return {}
    return claims if isinstance(claims, dict) else {}


class _RefreshingProvider:
    """A cached token renewed at 80-85% of its lifetime; ``fetch()`` makes a new one."""

    def __init__(self, time_ms: Callable[[], int] = _now_ms) -> None:
        self._time_ms = time_ms
        self._lock = threading.Lock()
        self._token: Optional[OAuthBearerToken] = None
        self._issued_ms = 0
        self._closed = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._last_error: Optional[BaseException] = None
        self.refreshes = 0

    def fetch(self) -> OAuthBearerToken:
        raise NotImplementedError

    def _renew(self) -> OAuthBearerToken:
        token = self.fetch()
        with self._lock:
            self._token, self._issued_ms = token, self._time_ms()
            self._last_error = None
            self.refreshes += 1
        return token

    def start(self) -> None:
        """The first token now (errors raise), then the refresh thread."""
        self._renew()
        self._thread = threading.Thread(
            target=self._refresh_loop, name="cproducer-oauthbearer-refresh", daemon=True
        )
        self._thread.start()

    def _refresh_at_ms(self) -> int:
        token, issued = self._token, self._issued_ms
        if token is None or token.expiry_ms is None:
            return issued + 3600_000
        lifetime = max(token.expiry_ms - issued, 0)
        factor = REFRESH_WINDOW_FACTOR + random.uniform(0, REFRESH_WINDOW_JITTER)
        return issued + int(lifetime * factor)

    def _refresh_loop(self) -> None:
        backoff = RETRY_BACKOFF_MS
        wait_ms = self._refresh_at_ms() - self._time_ms()
        while not self._closed.wait(max(wait_ms, 0) / 1000.0):
            try:
                self._renew()
                backoff = RETRY_BACKOFF_MS
                wait_ms = self._refresh_at_ms() - self._time_ms()
            except Exception as exc:
                self._last_error = exc
                log.warning(
                    "OAUTHBEARER token refresh failed (retrying in %d ms): %s", backoff, exc
                )
                wait_ms = backoff
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_MS)

    def __call__(self) -> OAuthBearerToken:
        with self._lock:
            token = self._token
        if token is None:
            return self._renew()
        if token.expiry_ms is not None and token.expiry_ms <= self._time_ms():
            last = self._last_error
            raise errors.SaslAuthenticationError(
                "OAUTHBEARER: the token expired and could not be renewed"
                + (f": {last}" if last is not None else "")
            )
        return token

    def close(self) -> None:
        self._closed.set()


class UnsecuredTokenProvider(_RefreshingProvider):
    """Java's ``OAuthBearerUnsecuredLoginCallbackHandler``: an unsigned JWT from JAAS options
    (``unsecuredLoginStringClaim_<name>``, ``unsecuredLoginNumberClaim_<name>``,
    ``unsecuredLoginListClaim_<name>`` whose first character separates the items,
    ``unsecuredLoginPrincipalClaimName`` (default ``sub``), ``unsecuredLoginLifetimeSeconds``
    (default 3600), ``unsecuredLoginExtension_<name>``)."""

    def __init__(self, options: Mapping[str, str], time_ms: Callable[[], int] = _now_ms) -> None:
        super().__init__(time_ms)
        self._claims: Dict[str, Any] = {}
        extensions: Dict[str, str] = {}
        for key, value in options.items():
            if key.startswith("unsecuredLoginStringClaim_"):
                self._claims[key[len("unsecuredLoginStringClaim_") :]] = value
            elif key.startswith("unsecuredLoginNumberClaim_"):
                try:
                    self._claims[key[len("unsecuredLoginNumberClaim_") :]] = float(value)
                except ValueError:
                    raise errors.ConfigError(
                        f"sasl.jaas.config: {key} must be a number, got {value!r}"
                    ) from None
            elif key.startswith("unsecuredLoginListClaim_"):
                items = value[1:].split(value[0]) if value else []
                self._claims[key[len("unsecuredLoginListClaim_") :]] = items
            elif key.startswith("unsecuredLoginExtension_"):
                extensions[key[len("unsecuredLoginExtension_") :]] = value
        self._extensions = check_extensions(extensions, "sasl.jaas.config")
        self._principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub")
        if not isinstance(self._claims.get(self._principal_claim), str):
            raise errors.ConfigError(
                "sasl.jaas.config: OAuthBearerLoginModule without a token endpoint makes "
                f"unsecured tokens and needs unsecuredLoginStringClaim_{self._principal_claim}"
                '="<principal>" (or set sasl.oauthbearer.token.endpoint.url for OIDC, or '
                "sasl_oauth_token_provider)"
            )
        try:
            self._lifetime_s = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))
        except ValueError:
            raise errors.ConfigError(
                "sasl.jaas.config: unsecuredLoginLifetimeSeconds must be an integer"
            ) from None

    def fetch(self) -> OAuthBearerToken:
        now = self._time_ms()
        claims = dict(self._claims)
        claims["iat"] = now / 1000.0
        claims["exp"] = now / 1000.0 + self._lifetime_s
        header = _b64url(json.dumps({"alg": "none"}).encode())
        body = _b64url(json.dumps(claims).encode())
        return OAuthBearerToken(
            f"{header}.{body}.", now + self._lifetime_s * 1000, self._extensions
        )

    def __repr__(self) -> str:
        return f"UnsecuredTokenProvider(principal={self._claims.get(self._principal_claim)!r})"


class ClientCredentialsTokenProvider(_RefreshingProvider):
    """OIDC client credentials: ``POST grant_type=client_credentials[&scope=...]`` to the token
    endpoint with HTTP Basic authentication of the client id and secret (Java's
    ``HttpAccessTokenRetriever``); the answer's ``access_token``, its lifetime from the JWT's
    ``exp`` claim, else from ``expires_in``. A ``file:`` URL names a file holding the token
    (read again at each refresh)."""

    def __init__(
        self,
        url: str,
        client_id: Optional[str],
        client_secret: Optional[Password],
        scope: Optional[str] = None,
        extensions: Optional[Mapping[str, str]] = None,
        time_ms: Callable[[], int] = _now_ms,
    ) -> None:
        super().__init__(time_ms)
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https", "file"):
            raise errors.ConfigError(
                "sasl.oauthbearer.token.endpoint.url: expected an http(s):// or file: URL, got "
                f"scheme {parsed.scheme!r}"
            )
        if parsed.scheme != "file" and (not client_id or client_secret is None):
            raise errors.ConfigError(
                "sasl.oauthbearer.token.endpoint.url needs the client's id and secret: "
                "sasl.oauthbearer.client.credentials.client.id and .client.secret (or clientId "
                "and clientSecret in sasl.jaas.config)"
            )
        self.url = url
        self._file = parsed.path if parsed.scheme == "file" else None
        self.client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self._extensions = dict(extensions or {})

    def __repr__(self) -> str:
        return f"ClientCredentialsTokenProvider(url={self.url!r}, client_id={self.client_id!r})"

    def fetch(self) -> OAuthBearerToken:
        if self._file is not None:
            try:
                with open(self._file, encoding="utf-8") as fh:
                    value = fh.read().strip()
            except OSError as exc:
                raise errors.SaslAuthenticationError(
                    f"OAUTHBEARER: cannot read the token file {self._file}: {exc.strerror}"
                ) from None
            return self._make_token(value, None)
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = f"{self.client_id}:{reveal(self._secret)}".encode()
        request = urllib.request.Request(
            self.url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": "Basic " + base64.b64encode(basic).decode(),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = _oauth_error(exc)
            raise errors.SaslAuthenticationError(
                f"OAUTHBEARER: the token endpoint {self.url} refused client {self.client_id!r}: "
                f"HTTP {exc.code}{detail}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise errors.SaslAuthenticationError(
                f"OAUTHBEARER: no token from {self.url}: {reason}"
            ) from None
        access = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(access, str) or not access:
            raise errors.SaslAuthenticationError(
                f"OAUTHBEARER: the answer of {self.url} has no access_token"
            )
        expires_in = body.get("expires_in")
        return self._make_token(
            access, expires_in if isinstance(expires_in, (int, float)) else None
        )

    def _make_token(self, value: str, expires_in: Optional[float]) -> OAuthBearerToken:
        exp = jwt_claims(value).get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            expiry: Optional[int] = int(exp * 1000)
        elif expires_in is not None:
            expiry = self._time_ms() + int(expires_in * 1000)
        else:
            expiry = None
        return OAuthBearerToken(value, expiry, self._extensions)


def _oauth_error(exc: urllib.error.HTTPError) -> str:
    """RFC 6749 section 5.2's error code of a refusal (never the rest of the body)."""
    try:
        body = json.loads(exc.read())
    except (ValueError, OSError):
        return ""
    code = body.get("error") if isinstance(body, dict) else None
    return (
        f" ({code})" if isinstance(code, str) and re.fullmatch(r"[\x20-\x7e]{1,64}", code) else ""
    )
