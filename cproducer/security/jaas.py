"""``sasl.jaas.config``: the Java client's JAAS login-module line, parsed (Java's ``JaasConfig``).

    org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";

One entry: a login module class, a control flag (required, requisite, sufficient, optional),
options ``name=value`` (values bare, or quoted with ``"`` or ``'``; a backslash escapes the next
character inside quotes), and a closing ``;``. The module names the mechanism family it belongs
to; ``check_module`` refuses a module that does not fit ``sasl.mechanism``.

Parse errors name the position, never the text around it: the line holds a password.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from cproducer.errors import ConfigError

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# the mechanisms each module logs in for
_MODULE_MECHANISMS = {
    PLAIN_MODULE: ("PLAIN",),
    SCRAM_MODULE: ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    OAUTHBEARER_MODULE: ("OAUTHBEARER",),
}
# modules of other clients and mechanisms, with what to use here instead
_REFUSED_MODULES = {
    "com.sun.security.auth.module.Krb5LoginModule": (
        "GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER"
    ),
    "software.amazon.msk.auth.iam.IAMLoginModule": (
        "the Java MSK IAM module (mechanism AWS_MSK_IAM) is a Java class; use "
        "sasl.mechanism=OAUTHBEARER with sasl_oauth_token_provider= a provider built on "
        "aws-msk-iam-sasl-signer-python's MSKAuthTokenProvider (see the README)"
    ),
}
_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: Dict[str, str] = field(repr=False)  # may hold a password

    def __repr__(self) -> str:
        names = ", ".join(self.options)
        return f"JaasEntry(module={self.module!r}, flag={self.flag!r}, options=[{names}])"


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login-module entry of ``sasl.jaas.config`` (Kafka allows exactly one)."""
    tokens = _tokenize(text)
    if not tokens:
        raise ConfigError(
            "sasl.jaas.config: empty; expected '<LoginModule> required key=\"value\" ...;'"
        )
    entries: List[JaasEntry] = []
    i = 0
    while i < len(tokens):
        kind, module, pos = tokens[i]
        if kind != "word":
            raise ConfigError(f"sasl.jaas.config: expected a login module class at offset {pos}")
        if i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise ConfigError(
                f"sasl.jaas.config: expected a control flag ({', '.join(_FLAGS)}) after the "
                "login module"
            )
        flag = tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise ConfigError(
                f"sasl.jaas.config: control flag must be one of {', '.join(_FLAGS)}, got "
                f"{tokens[i + 1][1]!r}"
            )
        i += 2
        options: Dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            kind, name, pos = tokens[i]
            if kind != "word":
                raise ConfigError(f"sasl.jaas.config: expected an option name at offset {pos}")
            if (
                i + 2 >= len(tokens)
                or tokens[i + 1][0] != "="
                or tokens[i + 2][0]
                not in (
                    "word",
                    "quoted",
                )
            ):
                raise ConfigError(
                    f"sasl.jaas.config: option {name!r} at offset {pos} needs '=value'"
                )
            options[name] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError("sasl.jaas.config: the login module entry must end with ';'")
        i += 1  # the ';'
        entries.append(JaasEntry(module, flag, options))
    if len(entries) != 1:
        raise ConfigError(
            f"sasl.jaas.config: expected exactly one login module, got {len(entries)}"
        )
    return entries[0]


def _tokenize(text: str) -> List[Tuple[str, str, int]]:
    """(kind, text, offset) with kind word, quoted, '=' or ';'."""
    out: List[Tuple[str, str, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            out.append((c, c, i))
            i += 1
        elif c in "\"'":
            start, quote = i, c
            i += 1
            buf = []
            while i < n and text[i] != quote:
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(text[i])
                i += 1
            if i >= n:
                raise ConfigError(f"sasl.jaas.config: quote opened at offset {start} never closes")
            out.append(("quoted", "".join(buf), start))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in "=;\"'":
                i += 1
            out.append(("word", text[start:i], start))
    return out


def check_module(entry: JaasEntry, mechanism: str) -> None:
    """Refuse a login module that cannot log in for ``mechanism``."""
    if entry.module in _REFUSED_MODULES:
        raise ConfigError(f"sasl.jaas.config: {entry.module}: {_REFUSED_MODULES[entry.module]}")
    mechanisms = _MODULE_MECHANISMS.get(entry.module)
    if mechanisms is None:
        raise ConfigError(
            f"sasl.jaas.config: unknown login module {entry.module!r}; expected one of "
            + ", ".join(_MODULE_MECHANISMS)
        )
    if mechanism not in mechanisms:
        raise ConfigError(
            f"sasl.jaas.config: {entry.module.rsplit('.', 1)[1]} logs in for "
            f"{' or '.join(mechanisms)}, but sasl.mechanism is {mechanism}"
        )
