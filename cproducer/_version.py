"""The one place the package's version is written.

``pyproject.toml`` reads it at build time (``[tool.setuptools.dynamic]``), so the wheel's metadata,
``cproducer.__version__``, ``cproducer-perf-test --version`` and the client software version that
ApiVersions v3+ reports to the broker are the same string. A release changes this line and adds
its section to CHANGELOG.md.
"""

__version__ = "0.1.0"
