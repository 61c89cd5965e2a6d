"""Workbench search with a scan bound (document 1, "Search", "Date filter", "Content search",
"Scan bound"): each step looks at the 200 most recent conversations not yet scanned and keeps
those meeting every condition; while older ones remain, the page offers to continue looking, so
an empty step proves nothing. Customer conditions match name, phone, e-mail and internal note;
message content matches inbound and outbound text and private notes (attachments never); the
last-activity dates are Beijing days, the end day included whole."""
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import exists, or_, select, tuple_

from core.api import ApiError
from core.clock import beijing_day_range, iso
from core.db import db
from core.text import storable
from desk.models import Conversation, Customer, Member, Message

SCAN_STEP = 200
TEXT_LIMIT = 200
FAR_PAST, FAR_FUTURE = date(2000, 1, 1), date(9998, 12, 30)


@dataclass(frozen=True)
class Conditions:
    """What every match must meet; empty text and absent dates are no condition."""

    customer: str = ""
    content: str = ""
    first_day: date | None = None
    last_day: date | None = None

    def empty(self) -> bool:
        """No condition at all: nothing to search for."""
        return not (self.customer or self.content or self.first_day or self.last_day)


@dataclass(frozen=True)
class Step:
    """One step's matches and where the next one starts (None: everything was scanned)."""

    matches: list
    scanned: int
    resume_after: str | None


def _day(text: str, name: str) -> date | None:
    """A YYYY-MM-DD date or nothing; else 400 invalid_search (detail: the field)."""
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise ApiError("invalid_search", 400, detail=name) from None
    if not FAR_PAST <= day <= FAR_FUTURE:  # the range's bounds, and the day after, must be instants
        raise ApiError("invalid_search", 400, detail=name)
    return day


def parse_conditions(customer: str, content: str, first_day: str, last_day: str) -> Conditions:
    """The search form's fields as conditions; 400 invalid_search for a bad date, a range that ends
    before it starts, or text over 200 characters or that no text can hold (NUL, lone surrogate)."""
    customer, content = customer.strip()[:TEXT_LIMIT + 1], content.strip()[:TEXT_LIMIT + 1]
    if len(customer) > TEXT_LIMIT or len(content) > TEXT_LIMIT or not storable(customer + content):
        raise ApiError("invalid_search", 400, detail="text")
    found = Conditions(customer, content, _day(first_day, "from"), _day(last_day, "to"))
    if found.first_day and found.last_day and found.last_day < found.first_day:
        raise ApiError("invalid_search", 400, detail="range")
    return found


def parse_resume(text: str) -> tuple[datetime, uuid.UUID] | None:
    """The scan position after which a continued step starts (`<last activity>|<id>`)."""
    if not text:
        return None
    try:
        moment, conversation_id = text.split("|")
        resume = datetime.fromisoformat(moment)
        if resume.tzinfo is None:
            raise ValueError("no offset")
        return resume.astimezone(UTC), uuid.UUID(conversation_id)
    except (ValueError, OverflowError):
        raise ApiError("invalid_search", 400, detail="after") from None


def _window(tenant_id: uuid.UUID, conditions: Conditions, after: tuple[datetime, uuid.UUID] | None):
    """The next conversations to scan, newest activity first (on the index ending in id)."""
    query = select(Conversation.id, Conversation.last_activity_at).where(Conversation.tenant_id == tenant_id)
    if conditions.first_day or conditions.last_day:
        lower, upper = beijing_day_range(conditions.first_day or FAR_PAST, conditions.last_day or FAR_FUTURE)
        query = query.where(Conversation.last_activity_at >= lower, Conversation.last_activity_at < upper)
    if after is not None:
        query = query.where(tuple_(Conversation.last_activity_at, Conversation.id) < tuple_(*after))
    return query.order_by(Conversation.last_activity_at.desc(), Conversation.id.desc())


def search_step(tenant_id: uuid.UUID, conditions: Conditions, after: tuple[datetime, uuid.UUID] | None) -> Step:
    """One bounded step of the search: two statements whatever the tenant's size (the window's
    keys, one past the step to know whether older ones remain; then the matches among the step's
    conversations, driven by the same window)."""
    window = _window(tenant_id, conditions, after)
    keys = db.session.execute(window.limit(SCAN_STEP + 1)).all()
    scanned = keys[:SCAN_STEP]
    if not scanned:
        return Step([], 0, None)
    step = window.limit(SCAN_STEP).subquery()
    query = (select(Conversation.id, Conversation.status, Conversation.last_activity_at,
                    Customer.name.label("customer_name"), Customer.phone, Customer.email,
                    Member.display_name.label("assignee_name"))
             .select_from(step).join(Conversation, Conversation.id == step.c.id)
             .join(Customer, Customer.id == Conversation.customer_id)
             .outerjoin(Member, Member.id == Conversation.assignee_member_id))
    if conditions.customer:
        typed = conditions.customer
        query = query.where(or_(*(column.icontains(typed, autoescape=True) for column in (
            Customer.name, Customer.phone, Customer.email, Customer.support_note))))
    if conditions.content:  # by conversation only: the (conversation_id, created_at) index, never the tenant's
        query = query.where(exists().where(
            Message.conversation_id == Conversation.id,
            Message.text.icontains(conditions.content, autoescape=True)))
    matches = db.session.execute(query.order_by(Conversation.last_activity_at.desc(), Conversation.id.desc())).all()
    last = scanned[-1]
    resume = f"{iso(last.last_activity_at)}|{last.id}" if len(keys) > SCAN_STEP else None
    return Step(matches, len(scanned), resume)
