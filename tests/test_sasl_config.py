"""SASL settings: sasl.jaas.config parsing, the three spellings of the credentials, refusals that
name the setting, and secrets that never show in a repr or a message."""

from __future__ import annotations

import logging
from typing import Any, Dict

import pytest

from cproducer import errors
from cproducer.producer.config import ProducerConfig
from cproducer.security.jaas import parse_jaas_config
from cproducer.security.login import SaslLogin, sasl_login_from_config
from cproducer.security.password import Password

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="alice" password="hunter2-\\"quoted\\"";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
    "  username='bob'\n  password=pw-bob ;"
)


def _login(**kwargs: Any) -> SaslLogin:
    provider = kwargs.pop("sasl_oauth_token_provider", None)
    cfg = ProducerConfig(bootstrap_servers="h:1", **kwargs)
    login = sasl_login_from_config(cfg.as_dict(), provider)
    assert login is not None
    return login


def test_jaas_config_parses_quotes_escapes_and_bare_values() -> None:
    entry = parse_jaas_config(PLAIN_JAAS)
    assert entry.module.endswith("PlainLoginModule") and entry.flag == "required"
    assert entry.options == {"username": "alice", "password": 'hunter2-"quoted"'}
    assert "hunter2" not in repr(entry)
    assert parse_jaas_config(SCRAM_JAAS).options == {"username": "bob", "password": "pw-bob"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ('PlainLoginModule username="a";', "control flag"),
        ('org.x.M required username="secret-value"', "must end with ';'"),
        ('org.x.M required username="secret-value;', "never closes"),
        ("org.x.M required username;", "needs '=value'"),
        ('a required x="1"; b required y="2";', "exactly one login module"),
    ],
)
def test_jaas_config_errors_name_the_problem_not_the_text(text: str, message: str) -> None:
    with pytest.raises(errors.ConfigError, match=message) as info:
        parse_jaas_config(text)
    assert "secret-value" not in str(info.value)


@pytest.mark.parametrize(
    "settings",
    [
        {"sasl_mechanism": "PLAIN", "sasl_jaas_config": PLAIN_JAAS},  # Java
        {"sasl_mechanism": "plain", "sasl_plain_username": "alice", "sasl_plain_password": "p"},
        {"sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": "p"},  # librdkafka
    ],
)
def test_the_three_spellings_of_password_credentials(settings: Dict[str, Any]) -> None:
    cfg: Dict[str, Any] = {"security.protocol": "SASL_SSL"}
    cfg.update({k: v for k, v in settings.items() if "." in k})
    kwargs = {k: v for k, v in settings.items() if "." not in k}
    login = sasl_login_from_config(ProducerConfig(cfg, bootstrap_servers="h:1", **kwargs).as_dict())
    assert login is not None and login.mechanism == "PLAIN" and login.username == "alice"
    assert login.new_client().initial_response().startswith(b"\0alice\0")


def test_scram_login_from_jaas() -> None:
    login = _login(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_jaas_config=SCRAM_JAAS,
    )
    assert login.new_client().mechanism == "SCRAM-SHA-512" and login.username == "bob"


def test_secrets_are_hidden_in_the_config_repr_and_in_messages(caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = ProducerConfig(
        bootstrap_servers="h:1",
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_jaas_config=PLAIN_JAAS,
        ssl_key_password="key-secret",
    )
    text = repr(cfg) + str(cfg.as_dict()) + repr(_login(**_plain_jaas()))
    assert "hunter2" not in text and "key-secret" not in text and "[hidden]" in text
    assert isinstance(cfg["sasl.jaas.config"], Password)
    with pytest.raises(errors.ConfigError) as info:  # given twice: both values stay hidden
        ProducerConfig(
            {"sasl.password": "first-secret"}, bootstrap_servers="h:1", sasl_plain_password="second"
        )
    assert "first-secret" not in str(info.value) and "second" not in str(info.value)
    assert "hunter2" not in caplog.text


def _plain_jaas() -> Dict[str, Any]:
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_jaas_config": PLAIN_JAAS,
    }


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"sasl_mechanism": "PLAIN"}, "SASL settings need security.protocol SASL_PLAINTEXT"),
        ({"security_protocol": "SASL_SSL"}, "sasl.mechanism is required"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "GSSAPI"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "MD5"}, "expected one of PLAIN"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "a"},
            "needs a password",
        ),
        (
            {**_plain_jaas(), "sasl_username": "alice", "sasl_password": "x"},
            "give them once",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_jaas_config": PLAIN_JAAS,
            },
            "PlainLoginModule logs in for PLAIN",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_jaas_config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
            },
            "MSKAuthTokenProvider",
        ),
        (
            {
                **_plain_jaas(),
                "sasl_login_callback_handler_class": "com.example.MyHandler",
            },
            "sasl_oauth_token_provider",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"},
            "OAUTHBEARER needs a token",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_username": "a",
            },
            "OAUTHBEARER takes a token, not a password",
        ),
        (
            {
                **_plain_jaas(),
                "sasl_oauthbearer_token_endpoint_url": "http://127.0.0.1:1/token",
            },
            "only for sasl.mechanism=OAUTHBEARER",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauthbearer_token_endpoint_url": "http://127.0.0.1:1/token",
            },
            "needs the client's id and secret",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauthbearer_scope": "kafka",
            },
            "needs sasl.oauthbearer.token.endpoint.url",
        ),
    ],
)
def test_sasl_configuration_errors_name_the_setting(settings: Dict[str, Any], message: str) -> None:
    with pytest.raises(errors.ConfigError, match=message):
        _login(**settings)


def test_an_oauthbearer_token_provider_and_a_jaas_token_source_together_are_refused() -> None:
    with pytest.raises(errors.ConfigError, match="give the token one way"):
        _login(
            security_protocol="SASL_SSL",
            sasl_mechanism="OAUTHBEARER",
            sasl_jaas_config="org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
            ' required unsecuredLoginStringClaim_sub="a";',
            sasl_oauth_token_provider=lambda: "tok",
        )
    login = _login(
        security_protocol="SASL_SSL",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=lambda: "t",
    )
    assert login.new_client().initial_response() == b"n,,\x01auth=Bearer t\x01\x01"
