"""First attempts' lateness in the pipeline tests that fire on time (summarised by tests/conftest.py)."""

LATENESS_MS: list[tuple[int, str]] = []
"""(lateness in ms, the test's name) of every such fire."""
