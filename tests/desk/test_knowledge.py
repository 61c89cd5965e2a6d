"""Knowledge documents: console pages, versions, publication, validity, safe processing, market."""
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from markupsafe import escape
from sqlalchemy import event, select, update

from core.clock import BEIJING, to_beijing, utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk import knowledge
from desk.demo import seed_demo
from desk.knowledge_market import ARTICLES, LICENSE, ORIGIN
from desk.models import KnowledgeDocument
from tests.conftest import csrf_from
from tests.support.jobs import work
from tests.support.knowledge import add_document, post_form, reloaded

MARKUP = ("<h1>Returns</h1><p>Within&nbsp;7 days &amp; unused.</p>\r\n<script>alert('x')</script>"
          "<style>p { color: red }</style><!-- internal -->\x07\x1b<p>Keep the box.</p>\n\n\n\n<br/>End\t.")


def _text(response) -> str:
    """The response body as text."""
    return response.get_data(as_text=True)


# Access


@pytest.mark.parametrize("path", ["/knowledge", "/template-market/knowledge"])
def test_knowledge_pages_refuse_agents(agent_client, path):
    assert agent_client.get(path).status_code == 403


def test_knowledge_forms_refuse_agents(agent_client, tenant):
    doc = add_document(tenant)
    token = csrf_from(_text(agent_client.get("/workbench")))
    for path in (f"/knowledge/{doc.id}/publish", f"/knowledge/{doc.id}/expire", "/knowledge"):
        assert agent_client.post(path, data={"csrf_token": token, "version": 1}).status_code == 403
    assert reloaded(doc).status == "draft"


def test_knowledge_pages_send_anonymous_visitors_to_the_login(client):
    response = client.get("/knowledge")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_another_tenants_document_is_not_found_and_never_listed(admin_client, other_tenant):
    foreign = add_document(other_tenant, title="Foreign secret title")
    assert admin_client.get(f"/knowledge/{foreign.id}").status_code == 404
    assert post_form(admin_client, f"/knowledge/{foreign.id}/publish", {"version": 1}).status_code == 404
    assert "Foreign secret title" not in _text(admin_client.get("/knowledge"))
    assert reloaded(foreign).status == "draft"


# Creating and listing


def test_empty_knowledge_page_explains_how_to_start(admin_client):
    page = _text(admin_client.get("/knowledge"))
    assert "No knowledge documents yet" in page and "Save as draft" in page and 'for="new-title"' in page


def test_creating_a_document_saves_a_trimmed_version_1_draft(admin_client, tenant):
    response = post_form(admin_client, "/knowledge",
                         {"title": "  Shipping  times ", "body": "\n Line one\r\nLine two \n"})
    doc = db.session.scalar(select(KnowledgeDocument))
    assert response.status_code == 302 and response.headers["Location"] == f"/knowledge/{doc.id}"
    assert (doc.tenant_id, doc.title, doc.body, doc.version, doc.status, doc.safe_processed) == \
        (tenant.id, "Shipping times", "Line one\nLine two", 1, "draft", False)


@pytest.mark.parametrize("title, body, field, message", [
    ("   ", "Body", "title", "Enter a title."),
    ("x" * 201, "Body", "title", "Use at most 200 characters."),
    ("Title", " \n\t ", "body", "Enter the text of the document."),
    ("Title", "x" * 20_001, "body", "Use at most 20,000 characters."),
    ("Title", "nul \x00 inside", "body", "Remove the characters that cannot be stored"),
])
def test_invalid_fields_re_render_the_form_with_the_message_next_to_the_field(admin_client, title, body, field,
                                                                             message):
    response = post_form(admin_client, "/knowledge", {"title": title, "body": body})
    page = _text(response)
    assert response.status_code == 422
    assert f'id="new-{field}-error" role="alert">{message}' in page and 'aria-invalid="true"' in page
    assert db.session.scalar(select(KnowledgeDocument)) is None


def test_the_longest_allowed_title_and_body_are_saved(admin_client):
    response = post_form(admin_client, "/knowledge", {"title": "t" * 200, "body": "b" * 20_000})
    assert response.status_code == 302
    assert len(db.session.scalar(select(KnowledgeDocument.body))) == 20_000


def test_the_list_shows_version_status_validity_in_beijing_time_and_why_a_document_is_not_usable(
        admin_client, tenant):
    now = utcnow()
    end = datetime(2031, 5, 6, 23, 59, tzinfo=BEIJING).astimezone(timezone.utc)
    add_document(tenant, "draft", title="A draft")
    add_document(tenant, "published", processed=True, title="Usable one", valid_until=end, version=3)
    add_document(tenant, "published", title="Waiting one")
    add_document(tenant, "published", title="Refused one", unsafe_reason="binary_content")
    add_document(tenant, "expired", processed=True, title="Withdrawn one")
    add_document(tenant, "published", processed=True, title="Ended one", valid_until=now - timedelta(seconds=1))
    page = _text(admin_client.get("/knowledge"))
    assert "v3" in page and "2031-05-06 23:59 Beijing time" in page
    for expected in ("usable for generation", "not usable: draft, publish it first", "knowledge_not_published",
                     "not usable yet: safe processing pending", "knowledge_not_safe",
                     "not usable: safe processing refused it (binary_content)",
                     "not usable: expired", "knowledge_expired", "not usable: its validity has ended"):
        assert expected in page, expected


def test_the_list_pages_with_an_opaque_cursor_and_htmx_gets_the_list_alone(admin_client, tenant):
    for n in range(55):
        add_document(tenant, title=f"Doc {n:02d}")
    first = _text(admin_client.get("/knowledge"))
    cursor = first.split("/knowledge?cursor=")[1].split('"')[0]
    older = admin_client.get(f"/knowledge?cursor={cursor}", headers={"HX-Request": "true"})
    assert first.count("<tr>") == 51 and "Doc 54" in first and "Doc 04" not in first
    assert _text(older).count("<tr>") == 6 and "Doc 04" in _text(older) and "<h1>" not in _text(older)
    assert "Older documents" not in _text(older) and "Vary" in older.headers
    assert admin_client.get("/knowledge?cursor=not-a-cursor").status_code == 400


# Versions, publication, validity, expiry


def test_editing_saves_a_new_draft_version_that_must_be_published_and_processed_again(admin_client, tenant):
    doc = add_document(tenant, "published", processed=True, body="Old text.", published_at=utcnow())
    response = post_form(admin_client, f"/knowledge/{doc.id}/versions",
                         {"version": 1, "title": "Returns 2026", "body": "New <b>text</b>."})
    doc = reloaded(doc)
    assert response.status_code == 302
    assert (doc.version, doc.status, doc.title, doc.body) == (2, "draft", "Returns 2026", "New <b>text</b>.")
    assert (doc.safe_processed, doc.safe_body, doc.unsafe_reason, doc.published_at) == (False, None, None, None)
    assert "not usable: draft" in _text(admin_client.get(f"/knowledge/{doc.id}"))


def test_an_edit_clears_a_refusal_of_the_previous_version(admin_client, tenant):
    doc = add_document(tenant, "published", unsafe_reason="empty_after_processing")
    post_form(admin_client, f"/knowledge/{doc.id}/versions", {"version": 1, "title": "T", "body": "Now text."})
    assert (reloaded(doc).version, reloaded(doc).unsafe_reason) == (2, None)


def test_an_edit_of_a_version_that_is_no_longer_current_is_refused_keeping_the_text(admin_client, tenant):
    doc = add_document(tenant, version=4)
    response = post_form(admin_client, f"/knowledge/{doc.id}/versions",
                         {"version": 3, "title": "Mine", "body": "My unsaved words"})
    assert response.status_code == 409
    assert "Someone saved version 4 meanwhile" in _text(response) and "My unsaved words" in _text(response)
    assert reloaded(doc).version == 4 and reloaded(doc).title == "Returns"


def test_an_invalid_edit_re_renders_the_editor_with_the_message(admin_client, tenant):
    doc = add_document(tenant)
    response = post_form(admin_client, f"/knowledge/{doc.id}/versions", {"version": 1, "title": "", "body": "x"})
    assert response.status_code == 422 and 'id="edit-title-error" role="alert">Enter a title.' in _text(response)
    assert reloaded(doc).version == 1


def test_publishing_queues_safe_processing_that_a_worker_runs(admin_client, tenant, app, redis_conn):
    doc = add_document(tenant, body=MARKUP)
    response = post_form(admin_client, f"/knowledge/{doc.id}/publish", {"version": 1})
    assert response.status_code == 302
    pending = reloaded(doc)
    assert (pending.status, pending.safe_processed) == ("published", False) and pending.published_at is not None
    partial = _text(admin_client.get(f"/knowledge/{doc.id}", headers={"HX-Request": "true"}))
    assert 'hx-trigger="load delay:1s"' in partial and "safe processing pending" in partial
    work(app, redis_conn, DEFAULT)
    done = reloaded(doc)
    assert done.safe_processed is True and done.safe_body.startswith("Returns\n\nWithin 7 days & unused.")
    partial = _text(admin_client.get(f"/knowledge/{doc.id}", headers={"HX-Request": "true"}))
    assert "hx-trigger" not in partial and "usable for generation" in partial


def test_publishing_a_version_that_is_no_longer_current_is_refused(admin_client, tenant, redis_conn):
    doc = add_document(tenant, version=2)
    response = post_form(admin_client, f"/knowledge/{doc.id}/publish", {"version": 1})
    assert response.status_code == 302 and reloaded(doc).status == "draft"
    assert "Someone saved version 2 meanwhile" in _text(admin_client.get(response.headers["Location"]))
    assert redis_conn.llen(f"rq:queue:{DEFAULT}") == 0


def test_valid_until_is_the_end_of_the_chosen_beijing_day(admin_client, tenant):
    doc = add_document(tenant, "published", processed=True)
    day = to_beijing(utcnow()).date() + timedelta(days=30)
    response = post_form(admin_client, f"/knowledge/{doc.id}/valid-until", {"valid_until": day.isoformat()})
    assert response.status_code == 302
    end = to_beijing(reloaded(doc).valid_until)
    assert (end.date(), end.hour, end.minute, end.second) == (day, 23, 59, 59)
    assert f"{day.isoformat()} 23:59 Beijing time" in _text(admin_client.get(f"/knowledge/{doc.id}"))


def test_today_is_a_valid_last_day(admin_client, tenant):
    doc = add_document(tenant)
    today = to_beijing(utcnow()).date()
    response = post_form(admin_client, f"/knowledge/{doc.id}/valid-until", {"valid_until": today.isoformat()})
    assert response.status_code == 302
    assert reloaded(doc).valid_until > utcnow()


@pytest.mark.parametrize("days, value, message", [
    (-1, None, "Choose today or a later date."),
    (3651, None, "Choose a date at most 10 years ahead."),
    (None, "", "Choose a date."),
    (None, "31/12/2030", "Choose a date."),
])
def test_a_valid_until_that_is_not_a_coming_day_is_refused_next_to_the_field(admin_client, tenant, days, value,
                                                                            message):
    doc = add_document(tenant)
    if days is not None:
        value = (to_beijing(utcnow()).date() + timedelta(days=days)).isoformat()
    response = post_form(admin_client, f"/knowledge/{doc.id}/valid-until", {"valid_until": value})
    assert response.status_code == 422
    assert f'id="valid-until-error" role="alert">{message}' in _text(response)
    assert reloaded(doc).valid_until is None


def test_the_end_date_can_be_removed(admin_client, tenant):
    doc = add_document(tenant, valid_until=utcnow() + timedelta(days=3))
    assert post_form(admin_client, f"/knowledge/{doc.id}/valid-until", {"clear": "1"}).status_code == 302
    assert reloaded(doc).valid_until is None


def test_expire_now_withdraws_the_document(admin_client, tenant):
    doc = add_document(tenant, "published", processed=True)
    assert post_form(admin_client, f"/knowledge/{doc.id}/expire", {}).status_code == 302
    assert reloaded(doc).status == "expired"
    assert "not usable: expired" in _text(admin_client.get(f"/knowledge/{doc.id}"))


def test_publishing_an_expired_processed_version_makes_it_usable_again(admin_client, tenant, app, redis_conn):
    doc = add_document(tenant, "expired", processed=True)
    post_form(admin_client, f"/knowledge/{doc.id}/publish", {"version": 1})
    assert knowledge.usability(reloaded(doc), utcnow()).usable
    work(app, redis_conn, DEFAULT)
    assert reloaded(doc).safe_processed is True


def test_changes_are_audited_without_the_body(admin_client, tenant):
    from core.audit import AuditEntry

    post_form(admin_client, "/knowledge", {"title": "Audited", "body": "Secret-ish body"})
    doc = db.session.scalar(select(KnowledgeDocument))
    post_form(admin_client, f"/knowledge/{doc.id}/publish", {"version": 1})
    entries = db.session.scalars(select(AuditEntry).order_by(AuditEntry.created_at)).all()
    assert [e.action for e in entries] == ["knowledge.created", "knowledge.published"]
    assert all("Secret-ish" not in str(e.summary) for e in entries)


# Safe processing


def test_processing_strips_markup_scripts_and_control_characters(tenant):
    doc = add_document(tenant, "published", body=MARKUP)
    assert knowledge.process_document(doc.id) is True
    doc = reloaded(doc)
    assert doc.safe_body == "Returns\n\nWithin 7 days & unused.\n\nKeep the box.\n\nEnd\t."
    assert (doc.safe_processed, doc.unsafe_reason, doc.body) == (True, None, MARKUP)


def test_processing_keeps_plain_text_and_its_paragraphs(tenant):
    body = "第一段：7 天内可退货。\n\n第二段 —  keep  spacing.\n\n\n\n\nLast line"
    doc = add_document(tenant, "published", body=body)
    knowledge.process_document(doc.id)
    assert reloaded(doc).safe_body == "第一段：7 天内可退货。\n\n第二段 —  keep  spacing.\n\nLast line"


def test_processing_drops_bidirectional_controls(tenant):
    doc = add_document(tenant, "published", body="price \u202e001\u202c yuan")
    knowledge.process_document(doc.id)
    assert reloaded(doc).safe_body == "price 001 yuan"


@pytest.mark.parametrize("body, reason", [
    ("<p> </p><script>var only = 'script';</script><!-- nothing -->", "empty_after_processing"),
    ("\x01\x02\x03\x04\x05\x06PK\x08\x0e\x0f\x10\x11 data", "binary_content"),
    ("x" * 20_001, "too_long"),
    ("s\np]&a>c0]=c<![c\n[pl&#[", "unparseable_markup"),
])
def test_processing_refuses_bodies_it_cannot_process_and_records_why(tenant, body, reason):
    doc = add_document(tenant, "published", body=body)
    assert knowledge.process_document(doc.id) is False
    doc = reloaded(doc)
    assert (doc.safe_processed, doc.safe_body, doc.unsafe_reason) == (False, None, reason)
    assert knowledge.usability(doc, utcnow()) == (knowledge.NOT_SAFE, reason)


def test_processing_does_nothing_unless_the_document_is_published(tenant):
    for status in ("draft", "expired"):
        doc = add_document(tenant, status, body="<b>x</b>")
        assert knowledge.process_document(doc.id) is False
        assert (reloaded(doc).safe_processed, reloaded(doc).safe_body) == (False, None)
    assert knowledge.process_document(uuid.uuid4()) is False


def test_processing_twice_writes_once(tenant):
    doc = add_document(tenant, "published", body="<i>Hello</i>")
    assert knowledge.process_document(doc.id) is True
    first = reloaded(doc).updated_at
    assert knowledge.process_document(doc.id) is True
    assert reloaded(doc).updated_at == first and reloaded(doc).safe_body == "Hello"


def test_a_stale_job_after_an_edit_writes_nothing(admin_client, tenant, app, redis_conn):
    doc = add_document(tenant, body="Version one")
    post_form(admin_client, f"/knowledge/{doc.id}/publish", {"version": 1})
    post_form(admin_client, f"/knowledge/{doc.id}/versions", {"version": 1, "title": "T", "body": "Version two"})
    work(app, redis_conn, DEFAULT)
    doc = reloaded(doc)
    assert (doc.version, doc.status, doc.safe_processed, doc.safe_body) == (2, "draft", False, None)


def test_an_edit_saved_while_the_job_processes_is_never_overwritten(tenant):
    """The edit commits between the job's read and its write: the job's conditional UPDATE misses."""
    doc = add_document(tenant, "published", body="Version one")

    edits = []

    def edit_first(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("UPDATE knowledge_document") and not edits:
            edits.append(doc.id)  # once: the edit's own UPDATE passes
            with db.engine.begin() as editor:  # another connection: another administrator's request
                editor.execute(update(KnowledgeDocument).where(KnowledgeDocument.id == doc.id)
                               .values(version=2, status="draft", body="Version two"))

    event.listen(db.engine, "before_cursor_execute", edit_first)
    try:
        assert knowledge.process_document(doc.id) is False
    finally:
        event.remove(db.engine, "before_cursor_execute", edit_first)
    assert edits == [doc.id]
    doc = reloaded(doc)
    assert (doc.version, doc.body, doc.safe_processed, doc.safe_body) == (2, "Version two", False, None)


# Template market and demo


def test_knowledge_market_lists_short_articles_with_origin_and_licence(admin_client):
    page = _text(admin_client.get("/template-market/knowledge"))
    assert 4 <= len(ARTICLES) <= 6
    for article in ARTICLES:
        assert escape(article["title"]) in page and escape(article["summary"]) in page
        assert knowledge.check_fields(article["title"], article["body"])[2] == {}
        assert knowledge.safe_text(article["body"])[0] == article["body"]
    assert f"Origin: {ORIGIN}" in page and "CC0" in page and page.count('name="csrf_token"') >= len(ARTICLES)


def test_importing_an_article_creates_a_draft_keeping_origin_and_licence(admin_client, tenant):
    article = ARTICLES[1]
    response = post_form(admin_client, f"/template-market/knowledge/{article['slug']}/import", {})
    doc = db.session.scalar(select(KnowledgeDocument))
    assert response.status_code == 302 and response.headers["Location"] == f"/knowledge/{doc.id}"
    assert (doc.tenant_id, doc.status, doc.version, doc.title, doc.body) == \
        (tenant.id, "draft", 1, article["title"], article["body"])
    assert doc.origin == f"{ORIGIN}: {article['title']}" and doc.license == LICENSE
    assert "Licence: " + LICENSE in _text(admin_client.get(response.headers["Location"]))


def test_importing_an_unknown_article_is_not_found(admin_client):
    assert post_form(admin_client, "/template-market/knowledge/nope/import", {}).status_code == 404


def test_the_demo_seed_processes_its_published_documents(app):
    seed_demo()
    db.session.commit()
    published = db.session.scalars(select(KnowledgeDocument).where(KnowledgeDocument.status == "published")).all()
    now = utcnow()
    assert published and all(knowledge.usability(doc, now).usable and doc.safe_body == doc.body for doc in published)
    drafts = db.session.scalars(select(KnowledgeDocument).where(KnowledgeDocument.status == "draft")).all()
    assert drafts and all(doc.safe_body is None for doc in drafts)
