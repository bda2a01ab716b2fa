"""``Password``: a secret config value that never shows itself (Java's ``ConfigDef.Type.PASSWORD``
type, ``org.apache.kafka.common.config.types.Password``).

``str()``, ``repr()`` and f-strings give ``[hidden]``; ``.value`` is the secret. Config values
that hold secrets (``sasl.jaas.config``, ``sasl.password``, ``ssl.key.password``, the OIDC client
secret) are kept wrapped, so a logged config, a repr of the producer's settings or an exception
message that quotes one cannot leak it.
"""

from __future__ import annotations

from typing import Any

HIDDEN = "[hidden]"


class Password:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if isinstance(value, Password):
            value = value.value
        if not isinstance(value, str):
            raise TypeError(f"a password must be a str, got {type(value).__name__}")
        self._value = value

    @property
    def value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return HIDDEN

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> Any:  # picklable (Spark ships configs to workers), still hidden
        return (Password, (self._value,))


def reveal(value: Any) -> Any:
    """The secret of a ``Password``; any other value as it is."""
    return value.value if isinstance(value, Password) else value
