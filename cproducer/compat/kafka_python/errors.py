"""kafka-python's ``kafka.errors`` at the facade's home: ``from kafka.errors import X`` becomes
``from cproducer.compat.kafka_python.errors import X`` (or ``from cproducer.errors import X``).

The classes are ``cproducer.errors``'s, the very same objects, so an ``except`` written with
either module catches what the producer raises.
"""

from cproducer.errors import *  # noqa: F403
from cproducer.errors import exception_for, for_code  # noqa: F401
