"""The tenant's customers as an external application may read them: cut to its scopes."""
import uuid

from sqlalchemy import select

from core.clock import iso
from core.db import db, tenant_row
from desk.models import Customer
from openapi.keyset import PAGE_SIZE, page
from openapi.models import OpenApp

# Scope -> the customer fields it reveals (`id` is always returned).
CUSTOMER_FIELDS = {
    "customers.basic.read": ("name", "created_at", "updated_at"),
    "customers.contact.read": ("phone", "email"),
    "customers.notes.read": ("support_note",),
}


def customer_json(customer: Customer, scopes: list[str]) -> dict:
    """A customer cut to the application's scopes; unauthorized fields are left out."""
    shown = {"id": str(customer.id)}
    for scope, fields in CUSTOMER_FIELDS.items():
        if scope in scopes:
            for name in fields:
                value = getattr(customer, name)
                shown[name] = iso(value) if name.endswith("_at") else value
    if "support_note" in shown and shown["support_note"] is None:
        shown["support_note"] = ""
    return shown


def list_customers(app: OpenApp, after: uuid.UUID | None) -> dict:
    """One page of the tenant's customers, ordered by id (keyset)."""
    query = select(Customer).where(Customer.tenant_id == app.tenant_id)
    if after is not None:
        query = query.where(Customer.id > after)
    rows = list(db.session.scalars(query.order_by(Customer.id).limit(PAGE_SIZE + 1)))
    return page(rows, lambda customer: customer_json(customer, app.scopes))


def get_customer(app: OpenApp, customer_id: uuid.UUID) -> dict:
    """One customer of the application's tenant (404 for any other)."""
    return customer_json(tenant_row(Customer, app.tenant_id, customer_id), app.scopes)
