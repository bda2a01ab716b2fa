"""Shared pytest set-up. Broker fixtures live in tests/integration/conftest.py."""
