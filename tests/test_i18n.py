"""The pages' language: the saved preference, else the switch's choice, else Accept-Language, else
Simplified Chinese; `<html lang>`; the header switch back to the same page; the account page; the
client script's catalog; times in Beijing time and numbers in each language."""
import re
from datetime import datetime, timezone

import pytest
from flask_babel import force_locale, ngettext

from core.db import db
from core.i18n import beijing, beijing_iso, number
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import login


ROUTES = {IMPERSONATION: "staff/impersonate", ASSISTANT: "assistant/login"}


def lang(response) -> str:
    """The page's `<html lang>`."""
    return re.search(r'<html lang="([^"]+)"', response.get_data(as_text=True))[1]


def csrf(page) -> str:
    """The CSRF token of a page's forms."""
    return re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page.get_data(as_text=True))[1]


def checked(page) -> str:
    """The language ticked on the account page."""
    return re.search(r'<input checked[^>]*value="([^"]+)"', page.get_data(as_text=True))[1]


def switch(browser, locale: str, here: str):
    """Press the header's language button on `here`."""
    return browser.post("/locale", data={"locale": locale, "next": here, "csrf_token": csrf(browser.get(here))})


@pytest.mark.parametrize("header, expected", [
    (None, "zh-CN"), ("zh-CN,zh;q=0.9", "zh-CN"), ("zh", "zh-CN"), ("zh-TW", "zh-CN"), ("en-US,en;q=0.9", "en"),
    ("en-GB", "en"), ("fr-FR,fr;q=0.9", "zh-CN"), ("fr, en;q=0.5", "en"), ("de, zh-CN;q=0.8, en;q=0.9", "en"),
])
def test_without_a_choice_the_browser_language_decides_and_chinese_is_the_default(app, header, expected):
    browser = app.test_client()
    browser.environ_base.pop("HTTP_ACCEPT_LANGUAGE")
    answer = browser.get("/login", headers={"Accept-Language": header} if header else {})
    assert answer.status_code == 200 and lang(answer) == expected


def test_the_login_page_speaks_the_chosen_language_and_keeps_it_after_logging_in(app, admin):
    browser = app.test_client()
    assert lang(browser.get("/login")) == "en"
    answer = switch(browser, "zh_CN", "/login?next=/workbench")
    assert answer.status_code == 302 and answer.headers["Location"] == "/login?next=/workbench"
    assert lang(browser.get("/login")) == "zh-CN"  # the switch beats the browser's English
    login(browser, admin.user.email)
    assert lang(browser.get("/extensions")) == "zh-CN"
    assert admin.user.locale is None  # chosen before logging in: not saved on the account


def test_the_header_switch_saves_the_choice_and_returns_to_the_same_page(app, admin_client, admin):
    page = admin_client.get("/extensions/automation?tab=runs")
    assert lang(page) == "en" and 'name="next" value="/extensions/automation?tab=runs"' in page.get_data(as_text=True)
    answer = switch(admin_client, "zh_CN", "/extensions/automation?tab=runs")
    assert answer.status_code == 302 and answer.headers["Location"] == "/extensions/automation?tab=runs"
    db.session.refresh(admin.user)
    assert admin.user.locale == "zh_CN"
    assert lang(admin_client.get("/extensions")) == "zh-CN"  # saved: the browser's English no longer decides
    other_browser = app.test_client()
    login(other_browser, admin.user.email)
    assert lang(other_browser.get("/extensions")) == "zh-CN"  # it follows the user to another device
    switch(admin_client, "en", "/extensions")
    assert lang(other_browser.get("/extensions")) == "en"


@pytest.mark.parametrize("target", ["//evil.example/", "/\\evil.example/", "https://evil.example/", "evil", ""])
def test_the_switch_never_leaves_the_site(admin_client, target):
    answer = switch(admin_client, "en", "/extensions") if not target else admin_client.post(
        "/locale", data={"locale": "en", "next": target, "csrf_token": csrf(admin_client.get("/extensions"))})
    location = answer.headers["Location"]
    assert answer.status_code == 302 and location.startswith("/") and not location.startswith(("//", "/\\"))


def test_a_page_answering_a_post_switches_back_to_the_page_that_sent_it(admin_client):
    page = admin_client.post("/account", data={"locale": "klingon", "csrf_token": csrf(admin_client.get("/account"))},
                             headers={"Referer": "http://localhost/account"})
    assert page.status_code == 422
    assert 'name="next" value="/account"' in page.get_data(as_text=True)


@pytest.mark.parametrize("locale", ["fr", "", "zh_TW", "EN"])
def test_an_unknown_language_is_refused(admin_client, locale):
    answer = admin_client.post("/locale", data={"locale": locale, "next": "/extensions",
                                                "csrf_token": csrf(admin_client.get("/extensions"))})
    assert answer.status_code == 400 and "invalid_locale" in answer.get_data(as_text=True)


def test_the_account_page_saves_the_language(admin_client, admin):
    page = admin_client.get("/account")
    assert page.status_code == 200 and checked(page) == "en"
    answer = admin_client.post("/account", data={"locale": "zh_CN", "csrf_token": csrf(page)})
    assert answer.status_code == 302 and answer.headers["Location"] == "/account"
    db.session.refresh(admin.user)
    shown = admin_client.get("/account")
    assert admin.user.locale == "zh_CN" and lang(shown) == "zh-CN" and checked(shown) == "zh_CN"


def test_an_agent_chooses_a_language_too(agent_client, agent):
    switch(agent_client, "zh_CN", "/workbench")
    db.session.refresh(agent.user)
    assert agent.user.locale == "zh_CN" and lang(agent_client.get("/workbench")) == "zh-CN"


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_session_switches_only_itself_never_the_users_setting(client, agent, kind):
    assert client.get(f"/{ROUTES[kind]}/{issue_link_token(kind, agent)}").status_code == 302
    switch(client, "zh_CN", "/workbench")
    db.session.refresh(agent.user)
    assert lang(client.get("/workbench")) == "zh-CN" and agent.user.locale is None
    assert client.get("/account").status_code == 403


def test_the_client_script_catalog_follows_the_language_in_its_address(client):
    english, chinese = client.get("/i18n/en.json"), client.get("/i18n/zh-CN.json")
    assert english.json == {"copied": "Copied", "copy_failed": "Copy failed: select the text",
                            "unfilled": "Fill in %(name)s before sending: this conversation has no value for it."}
    assert chinese.json["copied"] != "Copied" and re.search(r"[\u4e00-\u9fff]", chinese.json["copied"])
    assert set(chinese.json) == set(english.json) and "public" in chinese.headers["Cache-Control"]
    unknown = client.get("/i18n/fr.json")
    assert unknown.status_code == 404 and "not_found" in unknown.get_data(as_text=True)


MOMENT = datetime(2026, 11, 22, 16, 30, 5, tzinfo=timezone.utc)  # Monday 00:30:05 in Beijing


@pytest.mark.parametrize("locale, minutes, seconds", [
    ("en", "2026-11-23 00:30 Beijing time", "2026-11-23 00:30:05 Beijing time"),
    ("zh_CN", "2026-11-23 00:30 北京时间", "2026-11-23 00:30:05 北京时间"),
])
def test_times_show_in_beijing_time_with_the_zone_named(app, locale, minutes, seconds):
    with app.test_request_context(), force_locale(locale):
        assert beijing(MOMENT) == minutes and beijing_iso("2026-11-22T16:30:05.000000Z") == seconds
        assert beijing(MOMENT, with_zone=False) == "2026-11-23 00:30" and beijing(None) == ""


@pytest.mark.parametrize("value, text", [(9300.0, "9,300"), (2.5, "2.5"), (3.333, "3.33"), (-1.0, "-1"),
                                         (1234567, "1,234,567"), (7, "7"), ("x", "x"), (True, "True")])
@pytest.mark.parametrize("locale", ["en", "zh_CN"])
def test_numbers_show_at_most_two_decimals_in_each_language(app, locale, value, text):
    with app.test_request_context(), force_locale(locale):
        assert number(value) == text


@pytest.mark.parametrize("locale, texts", [("en", ["0 rules", "1 rule", "2 rules"]),
                                           ("zh_CN", ["0 条规则", "1 条规则", "2 条规则"])])
def test_counts_read_right_for_none_one_and_two(app, locale, texts):
    with app.test_request_context(), force_locale(locale):
        assert [ngettext("%(num)d rule", "%(num)d rules", n) for n in (0, 1, 2)] == texts


def test_the_template_market_counts_in_proper_english(admin_client):
    page = admin_client.get("/template-market/studio").get_data(as_text=True)
    assert "· 1 rule</p>" in page
    assert not re.search(r"\b1 (rules|fields|charts)\b", page) and "(s)" not in page


@pytest.mark.parametrize("language, expected, absent", [("en", "This field is required.", "必填"),
                                                        ("zh-CN", "必填", "This field is required.")])
def test_form_errors_follow_the_language(admin_client, language, expected, absent):
    page = admin_client.post("/account/password", headers={"Accept-Language": language}, data={
        "csrf_token": csrf(admin_client.get("/account/password")), "new_password": "short"})
    text = page.get_data(as_text=True)
    assert page.status_code == 422 and expected in text and absent not in text
    assert ("Use at least" in text) == (language == "en")  # our own message too
