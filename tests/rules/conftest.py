"""Fixtures shared by the automation rules' tests."""
import pytest

from tests.rules.test_service import RulesApi


@pytest.fixture
def rules(admin_client) -> RulesApi:
    """The administrator's browser speaking the automation rules API."""
    return RulesApi(admin_client)
