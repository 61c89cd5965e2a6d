"""Knowledge reference for generation: the selector's metadata pages, excerpts, snapshots."""
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import event

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from desk.models import KnowledgeDocument
from studio import knowledge_ref
from tests.support.knowledge import add_document, post_form, reloaded

SECRET_BODY = "Body words that the selector must never carry"


@pytest.fixture
def statements(app):
    """Every SQL statement the app sends while the test runs."""
    seen: list[str] = []

    def collect(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    event.listen(db.engine, "before_cursor_execute", collect)
    yield seen
    event.remove(db.engine, "before_cursor_execute", collect)


def _options(api, cursor: str | None = None):
    """GET the selector's page (after `cursor` when given)."""
    return api.get("/knowledge-options" + (f"?cursor={cursor}" if cursor is not None else ""))


# The selector


def test_options_come_20_per_page_then_the_rest_after_the_cursor(api, tenant):
    moment = utcnow()
    made = [add_document(tenant, title=f"Doc {n}", updated_at=moment - timedelta(seconds=n // 5))
            for n in range(25)]  # five documents per timestamp: ties are ordered by id
    first = _options(api).get_json()["data"]
    second = _options(api, first["next_cursor"]).get_json()["data"]
    assert len(first["documents"]) == 20 and isinstance(first["next_cursor"], str)
    assert len(second["documents"]) == 5 and second["next_cursor"] is None
    listed = [d["id"] for d in first["documents"] + second["documents"]]
    expected = sorted(made, key=lambda doc: (doc.updated_at, doc.id), reverse=True)
    assert listed == [str(doc.id) for doc in expected]


def test_an_option_carries_metadata_usability_and_the_reason(api, tenant):
    end = utcnow() + timedelta(days=2)
    doc = add_document(tenant, "published", processed=True, title="Returns", version=3, valid_until=end)
    add_document(tenant, "draft", title="Draft")
    documents = {d["title"]: d for d in _options(api).get_json()["data"]["documents"]}
    assert documents["Returns"] == {"id": str(doc.id), "title": "Returns", "version": 3, "status": "published",
                                    "valid_until": end.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "usable": True,
                                    "reason": None}
    assert (documents["Draft"]["usable"], documents["Draft"]["reason"], documents["Draft"]["valid_until"]) == \
        (False, "knowledge_not_published", None)


def test_options_never_read_bodies(api, tenant, statements):
    for status in ("draft", "published"):
        add_document(tenant, status, body=SECRET_BODY, processed=status == "published")
    statements.clear()
    response = _options(api)
    assert len(response.get_json()["data"]["documents"]) == 2
    assert "Body words" not in response.get_data(as_text=True)
    queries = [s for s in statements if "knowledge_document" in s]
    assert queries and not any("body" in s for s in queries)


def test_foreign_documents_are_never_listed(api, tenant, other_tenant):
    add_document(other_tenant, "published", processed=True, title="Theirs")
    mine = add_document(tenant, title="Mine")
    assert [d["id"] for d in _options(api).get_json()["data"]["documents"]] == [str(mine.id)]


def test_no_documents_is_an_empty_last_page(api):
    assert _options(api).get_json()["data"] == {"documents": [], "next_cursor": None}


@pytest.mark.parametrize("cursor", ["nope", "%00", "MjAyNi0xMS0yM3x4", "A" * 500,
                                    "MjAyNi0xMS0yM1QxMDowMDowMC4wMDAwMDBafDEyMzQ="])
def test_a_malformed_cursor_is_invalid_cursor(api, cursor):
    response = _options(api, cursor)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "invalid_cursor"


def test_the_options_need_an_administrator_console_session(agent_client, client):
    assert agent_client.get("/api/extensions/knowledge-options").status_code == 403
    assert client.get("/api/extensions/knowledge-options").status_code == 401


# Excerpts, snapshots


def _usable(tenant, body: str = "Usable text.", **fields) -> KnowledgeDocument:
    """A published, processed document."""
    return add_document(tenant, "published", processed=True, body=body, **fields)


def test_excerpts_keep_the_selected_order_with_title_and_version(tenant):
    first, second = _usable(tenant, title="First", body="One"), _usable(tenant, title="Second", body="Two", version=4)
    assert knowledge_ref.excerpts_for_generation(tenant.id, [second.id, first.id]) == [
        {"id": str(second.id), "title": "Second", "version": 4, "excerpt": "Two"},
        {"id": str(first.id), "title": "First", "version": 1, "excerpt": "One"}]


def test_an_excerpt_is_the_first_1200_characters_of_the_processed_text(tenant):
    doc = _usable(tenant, body="<p>" + "知" * 1_199 + "ab" + "c" * 500 + "</p>")
    (excerpt,) = knowledge_ref.excerpts_for_generation(tenant.id, [doc.id])
    assert excerpt["excerpt"] == "知" * 1_199 + "a"


@pytest.mark.parametrize("fields, code", [
    ({"status": "draft"}, "knowledge_not_published"),
    ({"status": "expired", "processed": True}, "knowledge_expired"),
    ({"status": "published", "processed": True, "valid_until_days": -1}, "knowledge_expired"),
    ({"status": "published"}, "knowledge_not_safe"),
    ({"status": "published", "unsafe_reason": "binary_content"}, "knowledge_not_safe"),
])
def test_each_unusable_document_is_refused_with_its_reason(tenant, fields, code):
    fields = dict(fields)
    if "valid_until_days" in fields:
        fields["valid_until"] = utcnow() + timedelta(days=fields.pop("valid_until_days"))
    usable, refused = _usable(tenant), add_document(tenant, **fields)
    for call in (knowledge_ref.excerpts_for_generation, knowledge_ref.snapshot):
        with pytest.raises(ApiError) as raised:
            call(tenant.id, [usable.id, refused.id])
        assert (raised.value.code, raised.value.status, raised.value.detail) == (code, 409, str(refused.id))


@pytest.mark.parametrize("foreign", [True, False])
def test_a_foreign_or_missing_document_is_not_found(tenant, other_tenant, foreign):
    missing = _usable(other_tenant).id if foreign else uuid.uuid4()
    for call in (knowledge_ref.excerpts_for_generation, knowledge_ref.snapshot):
        with pytest.raises(ApiError) as raised:
            call(tenant.id, [_usable(tenant).id, missing])
        assert (raised.value.code, raised.value.status) == ("not_found", 404)


def test_without_a_selection_nothing_is_read(tenant, statements):
    _usable(tenant)
    tenant_id = tenant.id  # loaded before counting
    statements.clear()
    assert knowledge_ref.excerpts_for_generation(tenant_id, []) == []
    assert knowledge_ref.snapshot(tenant_id, []) == [] and knowledge_ref.unchanged(tenant_id, [])
    assert statements == []


def test_snapshots_and_their_checks_read_no_body(tenant, statements):
    doc = _usable(tenant, body=SECRET_BODY, version=2)
    tenant_id, doc_id = tenant.id, doc.id  # loaded before counting
    statements.clear()
    snap = knowledge_ref.snapshot(tenant_id, [doc_id])
    assert snap == [{"id": str(doc_id), "version": 2}] and knowledge_ref.unchanged(tenant_id, snap)
    assert len(statements) == 2 and not any("body" in s for s in statements)


def test_unchanged_is_false_after_an_edit(admin_client, tenant):
    doc = _usable(tenant)
    snap = knowledge_ref.snapshot(tenant.id, [doc.id])
    post_form(admin_client, f"/knowledge/{doc.id}/versions", {"version": 1, "title": "T", "body": "Changed"})
    assert reloaded(doc).version == 2 and knowledge_ref.unchanged(tenant.id, snap) is False


def test_unchanged_is_false_after_expiry(admin_client, tenant):
    doc = _usable(tenant)
    snap = knowledge_ref.snapshot(tenant.id, [doc.id])
    post_form(admin_client, f"/knowledge/{doc.id}/expire", {})
    assert knowledge_ref.unchanged(tenant.id, snap) is False


def test_unchanged_is_false_once_the_validity_has_ended(tenant):
    doc = _usable(tenant)
    snap = knowledge_ref.snapshot(tenant.id, [doc.id])
    doc.valid_until = utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert knowledge_ref.unchanged(tenant.id, snap) is False


def test_unchanged_is_false_for_another_tenant(tenant, other_tenant):
    doc = _usable(tenant)
    snap = knowledge_ref.snapshot(tenant.id, [doc.id])
    assert knowledge_ref.unchanged(tenant.id, snap) and not knowledge_ref.unchanged(other_tenant.id, snap)
