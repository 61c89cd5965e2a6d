"""Knowledge reference for generation: selector metadata and the excerpts a model may read.

The selector and the consistency checks read metadata columns only; a body is read only for the
documents an administrator selected, cut to the excerpt length inside the query.
"""
import uuid

from sqlalchemy import Row, func, select

from core.api import ApiError
from core.clock import iso, utcnow
from core.db import db
from desk import knowledge
from desk.models import KnowledgeDocument
from studio.catalog import LIMITS

_EXCERPT = func.substr(KnowledgeDocument.safe_body, 1, LIMITS["knowledge_excerpt_chars"]).label("excerpt")


def _option_json(row: Row, usability: knowledge.Usability) -> dict:
    """One document of the selector: metadata and whether generation may use it."""
    return {"id": str(row.id), "title": row.title, "version": row.version, "status": row.status,
            "valid_until": iso(row.valid_until), "usable": usability.usable, "reason": usability.reason}


def options_page(tenant_id: uuid.UUID, cursor: str | None) -> dict:
    """One page of knowledge metadata for the selector (20, most recently changed first), never a
    body: `{"documents": [...], "next_cursor": str | null}`; a bad cursor is 400 invalid_cursor."""
    rows, after = knowledge.metadata_page(tenant_id, knowledge.parse_cursor(cursor),
                                          LIMITS["knowledge_page_size"])
    now = utcnow()
    return {"documents": [_option_json(row, knowledge.usability(row, now)) for row in rows],
            "next_cursor": knowledge.cursor_text(after) if after is not None else None}


def _selected(tenant_id: uuid.UUID, ids: list[uuid.UUID], *extra) -> list[Row]:
    """The selected documents of the tenant in the order given, each usable now: a missing or
    foreign id is 404 not_found, an unusable document 409 with its reason (detail: its id)."""
    if not ids:
        return []
    found = {row.id: row for row in db.session.execute(
        select(*knowledge.METADATA, *extra).where(KnowledgeDocument.tenant_id == tenant_id,
                                                   KnowledgeDocument.id.in_(set(ids))))}
    now = utcnow()
    for doc_id in ids:
        if doc_id not in found:
            raise ApiError("not_found", 404)
        refusal = knowledge.usability(found[doc_id], now).reason
        if refusal is not None:
            raise ApiError(refusal, 409, detail=str(doc_id))
    return [found[doc_id] for doc_id in ids]


def excerpts_for_generation(tenant_id: uuid.UUID, ids: list[uuid.UUID]) -> list[dict]:
    """For each selected id (order kept): {"id": str, "title", "version": int, "excerpt": first
    1,200 characters of safe_body}. Missing or foreign → ApiError("not_found", 404); not usable →
    ApiError(reason_code, 409): knowledge_not_published, knowledge_expired, knowledge_not_safe."""
    return [{"id": str(row.id), "title": row.title, "version": row.version, "excerpt": row.excerpt}
            for row in _selected(tenant_id, ids, _EXCERPT)]


def snapshot(tenant_id: uuid.UUID, ids: list[uuid.UUID]) -> list[dict]:
    """[{"id": str, "version": int}] of the selected documents, with the checks of the excerpts."""
    return [{"id": str(row.id), "version": row.version} for row in _selected(tenant_id, ids)]


def unchanged(tenant_id: uuid.UUID, snap: list[dict]) -> bool:
    """Whether every document of a snapshot is still usable at the same version."""
    try:
        current = _selected(tenant_id, [uuid.UUID(item["id"]) for item in snap])
    except ApiError:
        return False
    return [row.version for row in current] == [item["version"] for item in snap]
