"""Shared low-level pieces (Java's ``common.utils``): CRC-32C, murmur2, the native mutex, varint
sizes."""
