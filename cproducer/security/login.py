"""SaslLogin: the SASL settings of one producer, resolved once from its configuration (Java's
``LoginManager`` with its ``JaasContext`` and callback handlers).

``sasl_login_from_config`` reads ``sasl.mechanism`` and the credentials in any of the three
spellings: Java's ``sasl.jaas.config`` (PlainLoginModule / ScramLoginModule with ``username``
and ``password``; OAuthBearerLoginModule), librdkafka's ``sasl.username`` / ``sasl.password``
(kafka-python's ``sasl_plain_username`` / ``sasl_plain_password`` are the same settings), and
for OAUTHBEARER kafka-python's ``sasl_oauth_token_provider``, Java's OIDC settings
(``sasl.oauthbearer.token.endpoint.url`` with the client id, secret and scope), or the JAAS
module's unsecured-token options. Credentials given twice, or settings that would be ignored,
are refused with a ``ConfigError`` that names them.

``new_client()`` makes the mechanism client for one authentication; ``close()`` stops a token
refresh thread.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional

from cproducer import errors
from cproducer.security import jaas
from cproducer.security.oauthbearer import (
    ClientCredentialsTokenProvider,
    OAuthBearerToken,
    UnsecuredTokenProvider,
    check_extensions,
    user_token_provider,
)
from cproducer.security.password import Password, reveal
from cproducer.security.sasl_client import (
    MECHANISMS,
    OAUTHBEARER,
    PLAIN,
    OAuthBearerClient,
    PlainClient,
    SaslMechanismClient,
    ScramClient,
)

SASL_PROTOCOLS = ("sasl_plaintext", "sasl_ssl")
# Java's built-in OIDC login handler (the 3.x and 4.x class names): naming it is what Java needs
# for the token endpoint to be used; here the endpoint alone does it
_OIDC_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
)
_OIDC_KEYS = (
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.scope",
)
_SASL_KEYS = (
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
    "sasl.login.callback.handler.class",
    *_OIDC_KEYS,
)


class SaslLogin:
    def __init__(
        self,
        mechanism: str,
        username: Optional[str] = None,
        password: Optional[Password] = None,
        token_source: Optional[Callable[[], OAuthBearerToken]] = None,
    ) -> None:
        self.mechanism = mechanism
        self.username = username
        self._password = password
        self.token_source = token_source

    def __repr__(self) -> str:
        who = f", username={self.username!r}" if self.username is not None else ""
        return f"SaslLogin({self.mechanism}{who})"

    def new_client(self) -> SaslMechanismClient:
        if self.mechanism == PLAIN:
            return PlainClient(self.username or "", reveal(self._password) or "")
        if self.mechanism == OAUTHBEARER:
            assert self.token_source is not None
            token = self.token_source()
            return OAuthBearerClient(lambda: token.value, dict(token.extensions))
        return ScramClient(self.mechanism, self.username or "", reveal(self._password) or "")

    def close(self) -> None:
        close = getattr(self.token_source, "close", None)
        if callable(close):
            close()


def _text(values: Mapping[str, Any], key: str) -> Optional[str]:
    value = values.get(key)
    return None if value is None else str(reveal(value))


def sasl_login_from_config(
    values: Mapping[str, Any], token_provider: Any = None
) -> Optional[SaslLogin]:
    """The producer's SaslLogin, or None when ``security.protocol`` is not a SASL one (then no
    SASL setting may be given)."""
    protocol = values["security.protocol"]
    given = [k for k in _SASL_KEYS if values.get(k) is not None]
    if token_provider is not None:
        given.append("sasl_oauth_token_provider")
    if protocol not in SASL_PROTOCOLS:
        if given:
            raise errors.ConfigError(
                f"{', '.join(given)}: SASL settings need security.protocol SASL_PLAINTEXT or "
                f"SASL_SSL, not {protocol.upper()}"
            )
        return None
    mechanism = values.get("sasl.mechanism")
    if mechanism is None:
        raise errors.ConfigError(
            f"sasl.mechanism is required with security.protocol={protocol.upper()}: one of "
            + ", ".join(MECHANISMS)
        )
    handler = values.get("sasl.login.callback.handler.class")
    if handler is not None and not (
        handler in _OIDC_HANDLERS and values.get("sasl.oauthbearer.token.endpoint.url")
    ):
        raise errors.ConfigError(
            f"sasl.login.callback.handler.class: Java classes cannot be loaded here (got "
            f"{handler!r}); pass sasl_oauth_token_provider= a callable or an object with token() "
            "(the built-in OAuthBearerLoginCallbackHandler is accepted together with "
            "sasl.oauthbearer.token.endpoint.url)"
        )
    entry = None
    if values.get("sasl.jaas.config") is not None:
        entry = jaas.parse_jaas_config(str(reveal(values["sasl.jaas.config"])))
        jaas.check_module(entry, mechanism)
    oidc_given = [k for k in _OIDC_KEYS if values.get(k) is not None]
    if mechanism != OAUTHBEARER:
        extra = oidc_given + (["sasl_oauth_token_provider"] if token_provider is not None else [])
        if extra:
            raise errors.ConfigError(f"{', '.join(extra)}: only for sasl.mechanism=OAUTHBEARER")
        return _password_login(values, mechanism, entry)
    for key in ("sasl.username", "sasl.password"):
        if values.get(key) is not None:
            raise errors.ConfigError(
                f"{key}: OAUTHBEARER takes a token, not a password (sasl_oauth_token_provider, "
                "sasl.oauthbearer.token.endpoint.url, or sasl.jaas.config)"
            )
    return SaslLogin(mechanism, token_source=_token_source(values, entry, token_provider))


def _password_login(
    values: Mapping[str, Any], mechanism: str, entry: Optional[jaas.JaasEntry]
) -> SaslLogin:
    username, password = _text(values, "sasl.username"), values.get("sasl.password")
    if entry is not None:
        if username is not None or password is not None:
            raise errors.ConfigError(
                "sasl.jaas.config and sasl.username/sasl.password (sasl_plain_username/"
                "sasl_plain_password) both give the credentials: give them once"
            )
        unknown = sorted(set(entry.options) - {"username", "password"})
        if unknown:
            raise errors.ConfigError(
                f"sasl.jaas.config: option(s) {', '.join(unknown)} not supported for "
                f"{mechanism} (username and password are)"
            )
        username = entry.options.get("username")
        password = entry.options.get("password")
    if username is None or password is None:
        missing = "a username" if username is None else "a password"
        raise errors.ConfigError(
            f"sasl.mechanism={mechanism} needs {missing}: sasl.jaas.config with "
            'username="..." password="...", or sasl.username and sasl.password (kafka-python: '
            "sasl_plain_username, sasl_plain_password)"
        )
    return SaslLogin(mechanism, username, Password(str(reveal(password))))


def _token_source(
    values: Mapping[str, Any], entry: Optional[jaas.JaasEntry], token_provider: Any
) -> Callable[[], OAuthBearerToken]:
    options: Dict[str, str] = dict(entry.options) if entry is not None else {}
    url = values.get("sasl.oauthbearer.token.endpoint.url")
    if token_provider is not None:
        if url is not None or options:
            raise errors.ConfigError(
                "sasl_oauth_token_provider: give the token one way; it cannot be combined with "
                "sasl.oauthbearer.token.endpoint.url or sasl.jaas.config options"
            )
        return user_token_provider(token_provider)
    if url is not None:
        extensions = check_extensions(
            {k[len("extension_") :]: v for k, v in options.items() if k.startswith("extension_")},
            "sasl.jaas.config",
        )
        unknown = sorted(
            k
            for k in options
            if not k.startswith("extension_") and k not in ("clientId", "clientSecret", "scope")
        )
        if unknown:
            raise errors.ConfigError(
                f"sasl.jaas.config: option(s) {', '.join(unknown)} not supported with a token "
                "endpoint (clientId, clientSecret, scope, extension_<name> are)"
            )
        client_id = _either(
            values, options, "sasl.oauthbearer.client.credentials.client.id", "clientId"
        )
        secret = _either(
            values, options, "sasl.oauthbearer.client.credentials.client.secret", "clientSecret"
        )
        scope = _either(values, options, "sasl.oauthbearer.scope", "scope")
        provider = ClientCredentialsTokenProvider(
            str(url),
            client_id,
            Password(secret) if secret is not None else None,
            scope,
            extensions,
        )
        provider.start()
        return provider
    oidc = [k for k in _OIDC_KEYS if values.get(k) is not None]
    if oidc:
        raise errors.ConfigError(
            f"{', '.join(oidc)}: needs sasl.oauthbearer.token.endpoint.url (OIDC client "
            "credentials)"
        )
    if entry is None:
        raise errors.ConfigError(
            "sasl.mechanism=OAUTHBEARER needs a token: sasl_oauth_token_provider= a callable or "
            "an object with token(), or sasl.oauthbearer.token.endpoint.url with the client id "
            "and secret (OIDC), or sasl.jaas.config with OAuthBearerLoginModule options"
        )
    unknown = sorted(k for k in options if not k.startswith("unsecuredLogin"))
    if unknown:
        raise errors.ConfigError(
            f"sasl.jaas.config: option(s) {', '.join(unknown)} need "
            "sasl.oauthbearer.token.endpoint.url (without it the module makes unsecured tokens "
            "from unsecuredLogin* options)"
        )
    unsecured = UnsecuredTokenProvider(options)
    unsecured.start()
    return unsecured


def _either(
    values: Mapping[str, Any], options: Mapping[str, str], key: str, jaas_option: str
) -> Optional[str]:
    if values.get(key) is not None and jaas_option in options:
        raise errors.ConfigError(
            f"{key} and the sasl.jaas.config option {jaas_option} are both given: give it once"
        )
    value = values.get(key)
    if value is not None:
        return str(reveal(value))
    return options.get(jaas_option)
