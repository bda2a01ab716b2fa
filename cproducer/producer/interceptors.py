"""ProducerInterceptors: Java's chain of ``on_send`` / ``on_acknowledgement`` hooks.

An interceptor is any object with ``on_send(record) -> record``, ``on_acknowledgement(metadata,
exception)`` and optionally ``on_send_error(record, exception)`` / ``close()``. As in Java, an
exception raised by an interceptor is logged and swallowed: it never fails the send.
"""

from __future__ import annotations

import logging
from typing import Any, List, NamedTuple, Optional

log = logging.getLogger("cproducer.producer.interceptors")


class ProducerRecord(NamedTuple):
    topic: str
    value: Any = None
    key: Any = None
    headers: Any = None
    partition: Optional[int] = None
    timestamp_ms: Optional[int] = None


class ProducerInterceptors:
    def __init__(self, interceptors: List[Any]) -> None:
        self.interceptors = list(interceptors)

    def __bool__(self) -> bool:
        return bool(self.interceptors)

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        for interceptor in self.interceptors:
            try:
                out = interceptor.on_send(record)
                if out is not None:
                    record = out
            except Exception:
                log.warning(
                    "interceptor %r on_send failed; record passed on as it was",
                    interceptor,
                    exc_info=True,
                )
        return record

    def on_acknowledgement(self, metadata: Any, exception: Optional[BaseException]) -> None:
        for interceptor in self.interceptors:
            try:
                interceptor.on_acknowledgement(metadata, exception)
            except Exception:
                log.warning("interceptor %r on_acknowledgement failed", interceptor, exc_info=True)

    def on_send_error(self, record: ProducerRecord, exception: BaseException) -> None:
        for interceptor in self.interceptors:
            fn = getattr(interceptor, "on_send_error", None)
            try:
                if fn is not None:
                    fn(record, exception)
                else:
                    interceptor.on_acknowledgement(None, exception)
            except Exception:
                log.warning("interceptor %r on_send_error failed", interceptor, exc_info=True)

    def close(self) -> None:
        for interceptor in self.interceptors:
            fn = getattr(interceptor, "close", None)
            if fn is not None:
                try:
                    fn()
                except Exception:
                    log.warning("interceptor %r close failed", interceptor, exc_info=True)
