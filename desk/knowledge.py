"""Knowledge documents: drafts, versions, publication with safe processing, validity.

A document may feed generation only while it is published, safely processed and valid. Safe
processing is a job (`jobs.tasks.process_knowledge`) that turns the published body into plain
text; it writes only while the document is still published at the version it read, so an edit
made meanwhile is never overwritten. Saving a changed body is a new draft version that must be
published, and so processed, again.
"""
import base64
import logging
import re
import unicodedata
import uuid
from datetime import date, datetime, timedelta, timezone
from html.parser import HTMLParser
from typing import NamedTuple

from sqlalchemy import Row, and_, or_, select, update

from core import audit
from core.api import ApiError
from core.clock import beijing_day_range, iso, to_beijing, utcnow
from core.db import db, tenant_row
from core.text import storable
from desk.models import KnowledgeDocument

log = logging.getLogger(__name__)

TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 20_000
VALID_UNTIL_MAX_DAYS = 3_650  # a validity end at most ten years ahead
BINARY_SHARE = 0.1  # a body with more control characters than this share is not text
NOT_PUBLISHED, EXPIRED, NOT_SAFE = "knowledge_not_published", "knowledge_expired", "knowledge_not_safe"

Doc = KnowledgeDocument
# Every column except the two bodies: what lists and usability checks read.
METADATA = (Doc.id, Doc.tenant_id, Doc.title, Doc.version, Doc.status, Doc.valid_until,
            Doc.safe_processed, Doc.unsafe_reason, Doc.published_at, Doc.origin, Doc.license,
            Doc.created_at, Doc.updated_at)
Position = tuple[datetime, uuid.UUID]  # (updated_at, id) of the last document of a page
_CURSOR_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"  # core.clock.iso's format
_CURSOR_MAX_CHARS = 120


class Usability(NamedTuple):
    """Whether a document may feed generation, else the refusal code and what lies behind it."""

    reason: str | None
    detail: str | None = None

    @property
    def usable(self) -> bool:
        """No reason to refuse it."""
        return self.reason is None


def usability(doc: Doc | Row, now: datetime) -> Usability:
    """Published, safely processed and valid at `now`; a draft, then expiry, then safety refuse."""
    if doc.status == "draft":
        return Usability(NOT_PUBLISHED, "draft")
    if doc.status == "expired":
        return Usability(EXPIRED, "expired")
    if doc.valid_until is not None and doc.valid_until < now:
        return Usability(EXPIRED, "valid_until_passed")
    if not doc.safe_processed:
        return Usability(NOT_SAFE, doc.unsafe_reason or "pending")
    return Usability(None)


def cursor_text(position: Position) -> str:
    """The opaque cursor of a page that continues after `position`."""
    updated_at, doc_id = position
    raw = f"{iso(updated_at)}|{doc_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_cursor(text: str | None) -> Position | None:
    """A cursor `cursor_text` made (absent or empty: the first page), else 400 invalid_cursor."""
    if not text:
        return None
    try:
        if len(text) > _CURSOR_MAX_CHARS:
            raise ValueError("too long")
        moment, _, doc_id = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode().partition("|")
        position = (datetime.strptime(moment, _CURSOR_TIME).replace(tzinfo=timezone.utc), uuid.UUID(doc_id))
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors too
        raise ApiError("invalid_cursor", 400) from None
    if cursor_text(position) != text:  # one spelling per position: no lenient base64 or UUID forms
        raise ApiError("invalid_cursor", 400)
    return position


def metadata_page(tenant_id: uuid.UUID, after: Position | None, size: int) -> tuple[list[Row], Position | None]:
    """Up to `size` of the tenant's documents, bodies left unread, most recently changed first;
    and the position the next page continues after (None on the last page)."""
    query = select(*METADATA).where(Doc.tenant_id == tenant_id)
    if after is not None:
        moment, doc_id = after
        query = query.where(or_(Doc.updated_at < moment, and_(Doc.updated_at == moment, Doc.id < doc_id)))
    rows = db.session.execute(query.order_by(Doc.updated_at.desc(), Doc.id.desc()).limit(size + 1)).all()
    shown = rows[:size]
    return shown, ((shown[-1].updated_at, shown[-1].id) if len(rows) > size else None)


def check_fields(title: object, body: object) -> tuple[str, str, dict[str, str]]:
    """The title on one line without control characters, the body trimmed with LF line breaks,
    and what is wrong with them, by field: `required`, `too_long` or `unstorable` (a NUL or a
    lone surrogate)."""
    title = " ".join(_without_controls(title).split()) if isinstance(title, str) else ""
    body = body.replace("\r\n", "\n").strip() if isinstance(body, str) else ""
    errors = {}
    for field, value, limit in (("title", title, TITLE_MAX_CHARS), ("body", body, BODY_MAX_CHARS)):
        if not value:
            errors[field] = "required"
        elif len(value) > limit:
            errors[field] = "too_long"
        elif not storable(value):
            errors[field] = "unstorable"
    return title, body, errors


def _valid_fields(title: object, body: object) -> tuple[str, str]:
    """The cleaned title and body, else 400 invalid_document naming the first bad field."""
    title, body, errors = check_fields(title, body)
    if errors:
        raise ApiError("invalid_document", 400, detail=next(iter(errors)))
    return title, body


def get_document(tenant_id: uuid.UUID, document_id: uuid.UUID) -> Doc:
    """One document of the tenant; foreign and missing ids are both 404."""
    return tenant_row(Doc, tenant_id, document_id)


def create_document(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, title: object, body: object,
                    origin: str | None = None, license: str | None = None) -> Doc:
    """Save a new document as an unpublished version-1 draft (an import keeps origin and licence)."""
    title, body = _valid_fields(title, body)
    doc = Doc(tenant_id=tenant_id, title=title, body=body, version=1, status="draft",
              origin=origin, license=license)
    db.session.add(doc)
    db.session.flush()
    audit.record(tenant_id, actor_id, "knowledge.created", f"knowledge_document:{doc.id}",
                 {"version": 1, "origin": origin})
    return doc


def _swap(doc: Doc, expected_version: int, **values) -> None:
    """Change the document only if it is still at the version the administrator saw (409
    version_conflict otherwise), in one conditional UPDATE."""
    swapped = db.session.execute(
        update(Doc).where(Doc.id == doc.id, Doc.tenant_id == doc.tenant_id, Doc.version == expected_version)
        .values(**values).execution_options(synchronize_session=False))
    if swapped.rowcount != 1:
        raise ApiError("version_conflict", 409)
    db.session.refresh(doc)


def save_version(doc: Doc, actor_id: uuid.UUID | None, expected_version: int, title: object,
                 body: object) -> Doc:
    """Save an edit as the next version, a draft again: its body must be published and processed
    anew, so the processed text and any refusal of the previous version are cleared."""
    title, body = _valid_fields(title, body)
    _swap(doc, expected_version, version=Doc.version + 1, title=title, body=body, status="draft",
          safe_processed=False, safe_body=None, unsafe_reason=None, published_at=None)
    audit.record(doc.tenant_id, actor_id, "knowledge.version_saved", f"knowledge_document:{doc.id}",
                 {"version": doc.version})
    return doc


def publish(doc: Doc, actor_id: uuid.UUID | None, expected_version: int) -> Doc:
    """Publish the version the administrator saw; the caller queues safe processing after the commit."""
    _swap(doc, expected_version, status="published", published_at=utcnow())
    audit.record(doc.tenant_id, actor_id, "knowledge.published", f"knowledge_document:{doc.id}",
                 {"version": doc.version})
    return doc


def set_valid_until(doc: Doc, actor_id: uuid.UUID | None, day: date | None, now: datetime) -> Doc:
    """Valid through the end of a Beijing day from today on (400 invalid_valid_until); None: no end."""
    today = to_beijing(now).date()
    if day is not None and not today <= day <= today + timedelta(days=VALID_UNTIL_MAX_DAYS):
        raise ApiError("invalid_valid_until", 400, detail="past" if day < today else "too_far")
    doc.valid_until = None if day is None else beijing_day_range(day, day)[1] - timedelta(microseconds=1)
    db.session.flush()
    audit.record(doc.tenant_id, actor_id, "knowledge.valid_until_set", f"knowledge_document:{doc.id}",
                 {"version": doc.version, "valid_until": iso(doc.valid_until)})
    return doc


def expire(doc: Doc, actor_id: uuid.UUID | None) -> Doc:
    """Withdraw the document now: generation can no longer use it until it is published again."""
    doc.status = "expired"
    db.session.flush()
    audit.record(doc.tenant_id, actor_id, "knowledge.expired", f"knowledge_document:{doc.id}",
                 {"version": doc.version})
    return doc


class _TextOf(HTMLParser):
    """Collects the text of markup: tags, comments and the contents of script and style dropped,
    entities unescaped, block elements turned into line breaks."""

    HIDDEN = frozenset({"script", "style"})
    BLOCKS = frozenset({"address", "article", "blockquote", "br", "dd", "div", "dl", "dt", "h1", "h2",
                        "h3", "h4", "h5", "h6", "hr", "li", "ol", "p", "pre", "section", "table", "tr",
                        "ul"})

    def __init__(self):
        """Start with no text collected, outside any hidden element."""
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        """Enter a hidden element, or break the line before a block."""
        if tag in self.HIDDEN:
            self.hidden += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        """Leave a hidden element, or break the line after a block."""
        if tag in self.HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        """A self-closing tag (`<br/>`) breaks the line once."""
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        """Keep text outside script and style."""
        if not self.hidden:
            self.parts.append(data)


# Bidirectional embeddings, overrides and isolates can make text read differently than it is.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _is_control(char: str) -> bool:
    """A control character other than newline and tab, or a bidirectional control."""
    return (unicodedata.category(char) == "Cc" and char not in "\n\t") or char in _BIDI_CONTROLS


def _without_controls(text: str) -> str:
    """The text without control characters other than newline and tab, nor bidirectional ones."""
    return "".join(char for char in text if not _is_control(char))


def _looks_binary(body: str) -> bool:
    """Many control or replacement characters: bytes read as text, not an article."""
    odd = sum(1 for char in body if char == "\ufffd" or
              (unicodedata.category(char) == "Cc" and char not in "\n\t\r"))
    return odd > len(body) * BINARY_SHARE


def safe_text(body: str) -> tuple[str | None, str | None]:
    """The plain text of a body, or None and why it cannot be processed: `too_long`,
    `binary_content`, `unparseable_markup` or `empty_after_processing`."""
    if len(body) > BODY_MAX_CHARS:
        return None, "too_long"
    if _looks_binary(body):
        return None, "binary_content"
    parser = _TextOf()
    try:
        parser.feed(body)
        parser.close()
    except AssertionError:  # html.parser's answer to some malformed declarations
        return None, "unparseable_markup"
    text = "".join(parser.parts).replace("\r\n", "\n").replace("\r", "\n")
    text = _without_controls(text).replace("\xa0", " ")
    text = re.sub(r"[ \t]+\n", "\n", text)  # trailing blanks, so blank lines are empty lines
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return (text, None) if text else (None, "empty_after_processing")


def process_document(document_id: uuid.UUID) -> bool:
    """Safe processing of a published document; True when it left the document usable.

    Safe to run twice: it re-reads the row, does nothing unless the document is published and
    not processed yet, and writes in one conditional UPDATE that matches only while the document
    is still published, unprocessed, at the version it read. It owns its transaction (a job).
    """
    row = db.session.execute(select(Doc.version, Doc.status, Doc.body, Doc.safe_processed,
                                    Doc.unsafe_reason).where(Doc.id == document_id)).first()
    if row is None or row.status != "published":
        log.info("knowledge document %s is not published; nothing to process", document_id)
        return False
    if row.safe_processed or row.unsafe_reason:
        return row.safe_processed
    text, reason = safe_text(row.body)
    written = db.session.execute(
        update(Doc).where(Doc.id == document_id, Doc.version == row.version, Doc.status == "published",
                          Doc.safe_processed.is_(False), Doc.unsafe_reason.is_(None))
        .values(safe_processed=text is not None, safe_body=text, unsafe_reason=reason)
        .execution_options(synchronize_session=False))
    db.session.commit()
    if written.rowcount != 1:
        log.info("knowledge document %s changed while it was processed; nothing written", document_id)
        return False
    if reason is not None:
        log.info("knowledge document %s v%s refused by safe processing: %s", document_id, row.version, reason)
    return text is not None
