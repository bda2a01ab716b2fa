"""Serializers: turn keys and values into bytes before they are partitioned and appended.

A serializer is a callable ``f(value) -> bytes`` (kafka-python style) or an object with
``serialize(topic, value) -> bytes`` (Java style, optionally with ``headers``). ``None`` stays
``None`` (a null key or a tombstone value).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

SerializeFn = Callable[[str, Any], Optional[bytes]]


class StringSerializer:
    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, value: Any) -> Optional[bytes]:
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(f"StringSerializer expects str, got {type(value).__name__}")
        return value.encode(self.encoding)


class JsonSerializer:
    def serialize(self, topic: str, value: Any) -> Optional[bytes]:
        if value is None:
            return None
        return json.dumps(value, separators=(",", ":")).encode("utf-8")


class BytesSerializer:
    def serialize(self, topic: str, value: Any) -> Optional[bytes]:
        return value


def as_serialize_fn(serializer: Any) -> Optional[SerializeFn]:
    """Normalize a configured serializer to ``fn(topic, value) -> bytes`` (None: no serializer)."""
    if serializer is None:
        return None
    if hasattr(serializer, "serialize"):
        method = serializer.serialize
        return lambda topic, value: method(topic, value)
    fn = serializer
    return lambda topic, value: fn(value)
