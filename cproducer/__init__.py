"""cproducer: a Cython-compiled, high-performance Apache Kafka producer for Python."""

from cproducer import errors

__version__ = "0.1.0"
__all__ = ["errors", "__version__"]
