"""Security headers on every answer, and a session cookie (with its CSRF token) that is Secure over HTTPS."""
import re

import pytest

from core.config import PROJECT_ROOT
from tests.conftest import PASSWORD, build_app, login

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
FORWARDED_HTTPS = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "desk.example.com"}


def session_cookie(response) -> str:
    """The Set-Cookie header of the session cookie."""
    (cookie,) = [value for value in response.headers.getlist("Set-Cookie") if value.startswith("session=")]
    return cookie


@pytest.mark.parametrize("path", ["/login", "/extensions", "/workbench", "/account/password",
                                  "/open-platform"])
def test_console_pages_forbid_framing_sniffing_and_foreign_code(admin_client, path):
    response = admin_client.get(path)
    assert response.status_code == 200
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("path", ["/api/extensions", "/static/js/app.js", "/healthz", "/no-such-page"])
def test_every_other_answer_is_nosniff_and_unframeable_too(admin_client, path):
    response = admin_client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_over_https_the_session_cookie_and_its_csrf_token_are_secure(client, admin):
    form = client.get("/login", base_url="https://localhost")
    assert "; Secure" in session_cookie(form)  # the CSRF token lives in this cookie
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form.get_data(as_text=True))[1]
    response = client.post("/login", base_url="https://localhost", headers={"Referer": "https://localhost/login"},
                           data={"email": admin.user.email, "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302 and "; Secure" in session_cookie(response)


def test_behind_a_trusted_proxy_forwarded_https_makes_the_cookie_secure(app_config, app, admin):
    browser = build_app({**app_config, "TRUSTED_PROXIES": 1}).test_client()
    assert "; Secure" in session_cookie(browser.get("/login", headers=FORWARDED_HTTPS))


def test_forwarded_https_from_an_untrusted_client_is_ignored(client, app):
    assert "Secure" not in session_cookie(client.get("/login", headers=FORWARDED_HTTPS))


def test_plain_http_keeps_a_cookie_that_development_can_use(client, admin):
    assert "Secure" not in session_cookie(login(client, admin.user.email))


def test_session_cookie_secure_forces_it_on_plain_http(app_config, app):
    browser = build_app({**app_config, "SESSION_COOKIE_SECURE": True}).test_client()
    assert "; Secure" in session_cookie(browser.get("/login"))


INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"<style\b", re.I), "<style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "style attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "event handler attribute"),
    (re.compile(r"\bhx-on", re.I), "hx-on (evaluated code)"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
]


@pytest.mark.parametrize("template", sorted((PROJECT_ROOT / "templates").rglob("*.html")),
                         ids=lambda path: str(path.relative_to(PROJECT_ROOT / "templates")))
def test_templates_carry_nothing_the_policy_would_block(template):
    text = template.read_text()
    for pattern, what in INLINE:
        assert not pattern.search(text), f"{what} in {template.name}"


def test_htmx_injects_no_style_or_eval_and_its_indicator_css_is_ours(client, app):
    page = client.get("/login").get_data(as_text=True)
    config = re.search(r'<meta name="htmx-config" content=\'([^\']+)\'', page)[1]
    for setting in ('"includeIndicatorStyles":false', '"allowEval":false', '"allowScriptTags":false'):
        assert setting in config
    css = (PROJECT_ROOT / "static" / "css" / "app.css").read_text()
    assert ".htmx-indicator" in css and ".htmx-request .htmx-indicator" in css


def test_only_a_page_with_the_code_editor_allows_its_styles_by_a_fresh_nonce(admin_client):
    from tests.support.studio import ORIGIN, sample_definition

    created = admin_client.post("/api/extensions/", json={"definition": sample_definition()}, headers=ORIGIN)
    app_id = created.get_json()["data"]["extension_id"]
    nonces = []
    for _ in range(2):
        page = admin_client.get(f"/extensions/{app_id}")
        nonce = re.search(r'<meta name="csp-nonce" content="([^"]+)">', page.get_data(as_text=True))[1]
        assert page.headers["Content-Security-Policy"] == CSP.replace("style-src 'self'",
                                                                      f"style-src 'self' 'nonce-{nonce}'")
        nonces.append(nonce)
    assert nonces[0] != nonces[1] and len(nonces[0]) >= 24
    assert admin_client.get("/extensions").headers["Content-Security-Policy"] == CSP


@pytest.mark.parametrize("path, headers", [("/workbench", {}), ("/workbench", {"HX-Request": "true"}),
                                           ("/workbench/changes?since=2000-01-01T00:00:00Z", {}),
                                           ("/login", {}), ("/no-such-page", {})])
def test_pages_partials_and_polls_with_customer_data_are_never_stored(agent_client, path, headers):
    assert agent_client.get(path, headers=headers).headers["Cache-Control"] == "no-store"


def test_static_files_and_the_client_catalog_keep_their_own_caching(client):
    assert "no-store" not in client.get("/static/js/app.js").headers.get("Cache-Control", "")
    assert "public" in client.get("/i18n/en.json").headers["Cache-Control"]
