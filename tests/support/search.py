"""Conversations for the workbench search to find, or to scan past, at Beijing times."""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import insert

from core.clock import BEIJING, utcnow
from core.db import db
from desk.models import Conversation, Customer, Message


def make(tenant, name="Olga", at=None, text="hello", phone=None, email=None, note="", kind="public",
         direction="inbound", attachments=None) -> Conversation:
    """A customer with a conversation last active `at` (now by default) holding one message; committed."""
    customer = Customer(tenant_id=tenant.id, name=name, phone=phone, email=email, support_note=note)
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, last_activity_at=at or utcnow())
    db.session.add(conversation)
    db.session.flush()
    db.session.add(Message(tenant_id=tenant.id, conversation_id=conversation.id, direction=direction, kind=kind,
                           text=text, attachments=attachments or []))
    db.session.commit()
    return conversation


def beijing(day: str, clock: str) -> datetime:
    """A day and a time of day in Beijing."""
    return datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=BEIJING)


def fillers(tenant, count: int, newest: datetime) -> None:
    """`count` conversations, one minute apart from `newest` back, without a match."""
    customers = [{"id": uuid.uuid4(), "tenant_id": tenant.id, "name": f"Filler {n}", "support_note": "",
                  "created_at": newest, "updated_at": newest} for n in range(count)]
    db.session.execute(insert(Customer), customers)
    db.session.execute(insert(Conversation), [
        {"id": uuid.uuid4(), "tenant_id": tenant.id, "customer_id": c["id"], "status": "open",
         "bot_active": False, "created_at": newest, "updated_at": newest,
         "last_activity_at": newest - timedelta(minutes=n)} for n, c in enumerate(customers)])
    db.session.commit()
