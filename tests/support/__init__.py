"""What the tests share besides fixtures: plain helpers, constants and classes, one module a topic.
Fixtures live in the conftest.py files; no module under tests/ imports a test module (tests/test_layout.py)."""
