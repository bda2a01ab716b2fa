"""``cproducer.aio``: the short name of :mod:`cproducer.compat.aiokafka`, aiokafka's producer API
on the cproducer engine (``from cproducer.aio import AIOKafkaProducer``).

Every module of the facade is reachable under this name too (``cproducer.aio.errors`` is
``cproducer.compat.aiokafka.errors``, the same module object).
"""

import importlib
import sys

from cproducer.compat.aiokafka import *  # noqa: F403

# __getattr__: aiokafka's names of what is not a producer (AIOKafkaConsumer, ...) refused with
# where to look instead
from cproducer.compat.aiokafka import (
    __all__,  # noqa: F401
    __getattr__,  # noqa: F401
)

for _name in (
    "_errors_generated",
    "batch_builder",
    "completions",
    "config",
    "errors",
    "fast_send",
    "partitioner",
    "producer",
    "structs",
    "token_provider",
):
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(
        f"cproducer.compat.aiokafka.{_name}"
    )
