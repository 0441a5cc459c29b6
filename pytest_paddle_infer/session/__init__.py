"""The pytest process: items, session state, headers and summary, the pytest half of the
case path, fixtures and xdist grouping. Imports neither numpy nor paddle (tests/unit/test_layout.py)."""
