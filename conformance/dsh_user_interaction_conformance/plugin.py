"""The pytest plugin of the conformance suite."""
