"""Studio fixtures: applications in each state (the console API and a draft are tests/conftest.py's)."""
import pytest


@pytest.fixture
def live_app(api, draft_app) -> str:
    """An application whose version 1 is simulated and live."""
    assert api.simulate(draft_app).status_code == 200
    assert api.publish(draft_app).status_code == 200
    return draft_app
