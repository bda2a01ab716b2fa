"""Serializers: turn keys and values into bytes before they are partitioned and appended.

Three shapes are accepted, each called as its library calls it:

- an object with ``serialize(topic, headers, data)``: kafka-python 3's ``Serializer``
  (``kafka.serializer.Serializer`` subclasses, its ``JsonSerializer``...) and Java's
  ``Serializer.serialize(topic, headers, data)``. ``headers`` is the record's header list (a new
  empty list when the record has none); a header the serializer appends is sent with the record.
- an object with ``serialize(topic, data)`` (Java's two-argument form, the classes below);
- a plain callable ``f(data) -> bytes`` (kafka-python 2 and aiokafka).

The serializer is called for ``None`` too, as kafka-python does (its JsonSerializer keeps a
``None`` as ``None``: a null key or a tombstone value). ``close()`` is called when the producer
closes, when the serializer has one.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, List, Optional, Tuple

#: ``fn(topic, headers, data) -> bytes or None``
SerializeFn = Callable[[str, Optional[List[Tuple[str, Any]]], Any], Optional[bytes]]


class Serializer:
    """kafka-python 3's serializer protocol: ``serialize(topic, headers, data) -> bytes or None``
    and ``close()`` (called when the producer closes). Subclassing is optional."""

    def serialize(self, topic: str, headers: Optional[List[Tuple[str, Any]]], data: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        """Called once when the producer closes."""


class DefaultSerializer(Serializer):
    """kafka-python's DefaultSerializer: bytes, bytearray, memoryview and None pass as they are;
    anything else is ``data.encode(encoding)`` (a str)."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, headers: Optional[List[Tuple[str, Any]]], data: Any) -> Any:
        if data is None or type(data) in (bytes, bytearray, memoryview):
            return data
        return data.encode(self.encoding)


class JsonSerializer(DefaultSerializer):
    """kafka-python's JsonSerializer: ``json.dumps(data)`` (its default separators) encoded;
    None stays None."""

    def serialize(self, topic: str, headers: Optional[List[Tuple[str, Any]]], data: Any) -> Any:
        if data is None:
            return None
        return super().serialize(topic, headers, json.dumps(data))


class StringSerializer:
    """Java's StringSerializer: ``serialize(topic, value)``, str to bytes."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, value: Any) -> Optional[bytes]:
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(f"StringSerializer expects str, got {type(value).__name__}")
        return value.encode(self.encoding)


class BytesSerializer:
    """Java's ByteArraySerializer: the value as it is."""

    def serialize(self, topic: str, value: Any) -> Optional[bytes]:
        return value  # type: ignore[no-any-return]


def _takes_headers(method: Any) -> bool:
    """Whether ``serialize`` takes (topic, headers, data) rather than (topic, data).

    kafka-python tries the three-argument call and retries with two on a TypeError, which would
    call a serializer twice and hide a TypeError raised inside it; the signature is read once
    instead. One that cannot be read (a builtin) is given three arguments, as kafka-python's
    first try does."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            return True
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 3


def takes_headers(serializer: Any) -> bool:
    """True for a serializer object called with the record's headers."""
    method = getattr(serializer, "serialize", None)
    return method is not None and _takes_headers(method)


def as_serialize_fn(serializer: Any) -> Optional[SerializeFn]:
    """Normalize a configured serializer to ``fn(topic, headers, data) -> bytes`` (None: no
    serializer)."""
    if serializer is None:
        return None
    method = getattr(serializer, "serialize", None)
    if method is not None:
        if _takes_headers(method):
            return method  # type: ignore[no-any-return]
        return lambda topic, headers, data: method(topic, data)
    fn = serializer
    return lambda topic, headers, data: fn(data)
