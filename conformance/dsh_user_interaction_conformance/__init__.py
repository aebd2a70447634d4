"""The conformance suite for user-interaction providers and services."""

__all__: list[str] = []
