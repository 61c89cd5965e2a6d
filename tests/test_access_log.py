"""What the production web server logs: requests, never the one-time tokens or the data they carry."""
import time

import requests

from core.db import db
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from openapi.apps import SCOPES, create_app


def _log(tmp_path) -> str:
    time.sleep(0.2)  # the access line is written after the answer is sent
    return (tmp_path / "gunicorn.log").read_text()


def test_hand_off_tokens_never_reach_the_access_log(gunicorn, tmp_path, agent):
    for kind, route in ((IMPERSONATION, "staff/impersonate"), (ASSISTANT, "assistant/login")):
        token = issue_link_token(kind, agent)
        assert requests.get(f"{gunicorn}/{route}/{token}", allow_redirects=False).status_code == 302
        log = _log(tmp_path)
        assert f"/{route}/[redacted]" in log
        assert token not in log and token[:20] not in log


def test_bearer_tokens_and_record_data_never_reach_the_access_log(gunicorn, tmp_path, tenant, admin):
    token = create_app(tenant.id, admin.user_id, "Partner", list(SCOPES), None).token
    db.session.commit()
    answer = requests.post(f"{gunicorn}/api/v1/open/records", json={"data": {"note": "marker-51c2"}},
                           headers={"Authorization": f"Bearer {token}",
                                    "Idempotency-Key": "6a0c1a5e-1b7e-4a3b-9a3e-2b1c3d4e5f60"})
    assert answer.status_code == 201
    log = _log(tmp_path)
    assert "POST /api/v1/open/records" in log
    assert token not in log and "marker-51c2" not in log
