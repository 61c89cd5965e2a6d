"""Open API fixtures: a client with a bearer token (applications are made by tests/conftest.py's
`make_open_app`)."""
import pytest

from tests.support.openapi import OpenClient


@pytest.fixture
def open_client(make_open_app) -> OpenClient:
    """An application holding every scope."""
    return make_open_app()[1]
