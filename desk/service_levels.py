"""Service levels (issue 36), the stored part: a tenant's policies — exactly one default
(`channel_id` null) and at most 20 per-channel overrides, each with first-response, next-response
and resolution targets (null: no target, or 1 to 43,200 minutes) counted in `business` or
`calendar` hours — and its weekly business hours (at most 14 entries of members' shift shape).

`POST /api/extensions/service-levels` replaces both; any bad policy or weekly hours, a channel of
another tenant or one named twice included, is `400 invalid_policy` at its path; a property no
object has is `400 invalid_json`, as everywhere in the console JSON API. Services flush only.
"""
import uuid

from sqlalchemy import select

from core import audit
from core.clock import utcnow
from core.db import db, upsert_insert
from core.validation import check_array, check_choice, check_integer, fail, item_at, prop_at
from desk.availability import check_shift, refused_as, strict_object
from desk.models import Channel
from desk.service_level_models import HOURS_KINDS, ServiceLevelSettings

TARGETS = ("first_response_minutes", "next_response_minutes", "resolution_minutes")
TARGET_RANGE = (1, 43_200)  # minutes: up to 30 days
OVERRIDES_LIMIT, HOURS_LIMIT = 20, 14
DEFAULT_POLICY = {"channel_id": None, **{name: None for name in TARGETS}, "hours": "business"}


def _channel_id(value: object, path: str) -> str | None:
    """null, or a channel id written as a UUID (returned in its canonical form)."""
    if value is None:
        return None
    if not isinstance(value, str):
        fail(path)
    try:
        return str(uuid.UUID(value))
    except ValueError:
        fail(path)


def _policy(value: object, path: str) -> dict:
    """`{channel_id, first_response_minutes, next_response_minutes, resolution_minutes, hours}`, all
    five required: a channel id (text) or null, each target null or 1-43,200, hours business or
    calendar."""
    obj = strict_object(value, path, ("channel_id", *TARGETS, "hours"))
    policy = {"channel_id": _channel_id(obj["channel_id"], prop_at(path, "channel_id"))}
    for name in TARGETS:
        policy[name] = None if obj[name] is None else check_integer(obj[name], prop_at(path, name), *TARGET_RANGE)
    policy["hours"] = check_choice(obj["hours"], prop_at(path, "hours"), HOURS_KINDS)
    return policy


def validate_settings(tenant_id: uuid.UUID, policies: object, hours: object) -> tuple[list[dict], list[dict]]:
    """The tenant's policies (the default first, then the overrides as given) and weekly hours, else
    400 invalid_policy at `policies`, `policies[i].…` or `hours[i].…`: exactly one default, at most
    20 overrides, each channel the tenant's and named once."""
    with refused_as("invalid_policy"):
        items = check_array(policies, "policies", 1, OVERRIDES_LIMIT + 1)
        checked = [_policy(item, item_at("policies", index)) for index, item in enumerate(items)]
        weekly = [check_shift(item, item_at("hours", index))
                  for index, item in enumerate(check_array(hours, "hours", 0, HOURS_LIMIT))]
        defaults = [index for index, policy in enumerate(checked) if policy["channel_id"] is None]
        if len(defaults) != 1:
            fail(item_at("policies", defaults[1]) if defaults else "policies")
        named = [policy["channel_id"] for policy in checked if policy["channel_id"] is not None]
        own = {str(found) for found in db.session.scalars(select(Channel.id).where(
            Channel.tenant_id == tenant_id, Channel.id.in_([uuid.UUID(name) for name in named])))}
        seen = set()
        for index, policy in enumerate(checked):
            channel = policy["channel_id"]
            if channel is not None and (channel not in own or channel in seen):
                fail(prop_at(item_at("policies", index), "channel_id"))
            seen.add(channel)
    return [checked[defaults[0]]] + [policy for policy in checked if policy["channel_id"] is not None], weekly


def settings_of(tenant_id: uuid.UUID) -> dict:
    """`{policies, hours}` of the tenant: the default policy without targets and no weekly hours
    until the first save."""
    row = db.session.get(ServiceLevelSettings, tenant_id)
    if row is None:
        return {"policies": [dict(DEFAULT_POLICY)], "hours": []}
    return {"policies": row.policies, "hours": row.hours}


def save_settings(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, policies: object, hours: object) -> dict:
    """Validate and replace the tenant's policies and weekly hours together (one upsert), audited;
    returns them as saved. Timers already running keep the due times they were given. Flushes only."""
    checked, weekly = validate_settings(tenant_id, policies, hours)
    table = ServiceLevelSettings.__table__
    values = {"policies": checked, "hours": weekly, "updated_at": utcnow()}
    statement = upsert_insert(db.session.get_bind().dialect.name)(table).values(tenant_id=tenant_id, **values)
    db.session.execute(statement.on_conflict_do_update(index_elements=[table.c.tenant_id], set_=values))
    audit.record(tenant_id, actor_id, "service_levels.saved", f"tenant:{tenant_id}",
                 {"policies": len(checked), "hours": len(weekly)})
    return {"policies": checked, "hours": weekly}
