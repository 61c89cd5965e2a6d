"""What the production web server logs: requests, never the one-time tokens or the data they carry."""
import time
from datetime import timedelta
from types import SimpleNamespace

import requests
from gunicorn.config import Config

from core.db import db
from core.logs import AccessLogger
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app
from tests.conftest import PASSWORD, csrf_from


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
    token = create_app(tenant.id, admin.user_id, "Partner", list(SCOPES), None, processing_confirmed=True,
                       confirmed_scopes=CONFIRMED_SCOPES).token
    db.session.commit()
    answer = requests.post(f"{gunicorn}/api/v1/open/records", json={"data": {"note": "marker-51c2"}},
                           headers={"Authorization": f"Bearer {token}",
                                    "Idempotency-Key": "6a0c1a5e-1b7e-4a3b-9a3e-2b1c3d4e5f60"})
    assert answer.status_code == 201
    log = _log(tmp_path)
    assert "POST /api/v1/open/records" in log
    assert token not in log and "marker-51c2" not in log


def _logged_in(gunicorn: str, email: str) -> requests.Session:
    """A browser session logged in through the real form of the gunicorn process."""
    browser = requests.Session()
    page = browser.get(f"{gunicorn}/login").text
    answer = browser.post(f"{gunicorn}/login", data={"email": email, "password": PASSWORD,
                                                     "csrf_token": csrf_from(page)}, allow_redirects=False)
    assert answer.status_code == 302
    return browser


def test_search_text_never_reaches_the_access_log_nor_through_a_referer(gunicorn, tmp_path, agent):
    browser = _logged_in(gunicorn, agent.user.email)
    searched = (f"{gunicorn}/workbench/search?q=%2B15550000&content=my+card+number+4111111111111111"
                "&from=2026-11-01#frag-secret")
    assert browser.get(searched).status_code == 200
    assert browser.get(f"{gunicorn}/workbench", headers={"Referer": searched}).status_code == 200
    browser.get(f"{gunicorn}/workbench/changes?since=2026-11-27T00:00:00%2B08:00&secret=4111111111111111")
    log = _log(tmp_path)
    assert "GET /workbench/search?[redacted] HTTP/1.1" in log
    assert f"{gunicorn}/workbench/search?[redacted]" in log  # the referrer, its query cut
    for secret in ("15550000", "4111111111111111", "my+card", "frag-secret", "2026-11-01"):
        assert secret not in log


def test_every_atom_a_log_format_may_name_is_redacted():
    """Whatever access_log_format an operator sets: the query, the referrer, the URL in the header
    and environ forms, cookies and credentials."""
    logger = AccessLogger(Config())
    secret = "4111111111111111"
    environ = {"REQUEST_METHOD": "GET", "RAW_URI": f"/workbench/search?q={secret}", "SERVER_PROTOCOL": "HTTP/1.1",
               "PATH_INFO": "/workbench/search", "QUERY_STRING": f"q={secret}",
               "HTTP_REFERER": f"https://desk.example/workbench/search?content={secret}",
               "HTTP_COOKIE": f"session={secret}", "HTTP_AUTHORIZATION": f"Bearer {secret}"}
    request = SimpleNamespace(headers=[("Referer", environ["HTTP_REFERER"]), ("Cookie", environ["HTTP_COOKIE"]),
                                       ("Authorization", environ["HTTP_AUTHORIZATION"])])
    response = SimpleNamespace(status="200 OK", headers=[], sent=10)
    atoms = logger.atoms(response, request, environ, timedelta(seconds=0.01))
    assert atoms["r"] == "GET /workbench/search?[redacted] HTTP/1.1"
    assert atoms["f"] == atoms["{referer}i"] == atoms["{http_referer}e"] == \
        "https://desk.example/workbench/search?[redacted]"
    assert not [name for name, value in atoms.items() if secret in str(value)]
