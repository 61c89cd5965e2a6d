"""Who else is here (issue 37): which conversation each member of a tenant has open in the
workbench and whether they are typing a reply or a note, kept in Redis only.

Each workbench poll reports the member's open conversation and typing flag and reads everyone
else's in one Lua script: one hash per tenant, a field per member holding the instant (the Redis
server's clock) after which the entry no longer counts, so an entry lives TTL_MS after the member's
last poll and the hash itself expires TTL_MS after the tenant's last one. Nothing of it reaches the
database; losing it (a Redis restart) only hides who is here until the next polls.
"""
import hashlib
import json
import uuid
from dataclasses import dataclass

import redis
from babel.lists import format_list
from flask_babel import get_locale, gettext as _

from core.redis import SERVER_NOW, run_script

TTL_MS = 30_000
TYPING = ("reply", "note")

# KEYS[1] the tenant's hash; ARGV: member id, "write" or "read", open conversation ("" for none),
# typing ("", "reply" or "note"), the member's name, TTL in ms. Returns the live entries as
# [member, conversation, typing, name, ...]; removes the expired ones.
_REPORT = SERVER_NOW + """
local key, member = KEYS[1], ARGV[1]
if ARGV[2] == 'write' then
  if ARGV[3] == '' then
    redis.call('HDEL', key, member)
  else
    local ttl = tonumber(ARGV[6])
    redis.call('HSET', key, member, (now_ms + ttl) .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[5])
    redis.call('PEXPIRE', key, ttl)
  end
end
local live = {}
local entries = redis.call('HGETALL', key)
for i = 1, #entries, 2 do
  local until_ms, conversation, typing, name = string.match(entries[i + 1], '^(%d+)|([^|]*)|([^|]*)|(.*)$')
  if until_ms == nil or tonumber(until_ms) <= now_ms then
    redis.call('HDEL', key, entries[i])
  else
    table.insert(live, entries[i]); table.insert(live, conversation)
    table.insert(live, typing); table.insert(live, name)
  end
end
return live
"""


@dataclass(frozen=True)
class Viewer:
    """A member with a conversation open in the workbench."""
    member_id: str
    conversation_id: str
    typing: str  # "", "reply" or "note"
    name: str


def _key(tenant_id: uuid.UUID) -> str:
    return f"desk:viewers:{tenant_id}"


def report(connection: redis.Redis, tenant_id: uuid.UUID, member_id: uuid.UUID, name: str,
           conversation_id: uuid.UUID | None, typing: str, *, write: bool = True) -> list[Viewer]:
    """Record that the member has `conversation_id` open (None: none) and is typing `typing` (one of
    TYPING, anything else: not typing), unless `write` is false (a session that does not speak for
    the member); the tenant's live entries, the member's own included."""
    found = run_script(connection, _REPORT, [_key(tenant_id)],
                       [str(member_id), "write" if write else "read", str(conversation_id or ""),
                        typing if typing in TYPING else "", name, TTL_MS])
    values = [v.decode() for v in found]
    return [Viewer(*values[i:i + 4]) for i in range(0, len(values), 4)]


def others(viewers: list[Viewer], member_id: uuid.UUID) -> list[Viewer]:
    """Everyone's entries but the member's own, by name."""
    return sorted((v for v in viewers if v.member_id != str(member_id)), key=lambda v: (v.name, v.member_id))


def notice(viewers: list[Viewer], conversation_id: uuid.UUID | None) -> str:
    """What the thread header says of the others in the conversation: who is typing what, who is
    only looking ("" for no one)."""
    here = [v for v in viewers if conversation_id is not None and v.conversation_id == str(conversation_id)]
    words = {"reply": _("%(name)s is typing a reply…"), "note": _("%(name)s is typing a note…"),
             "": _("%(name)s is here too")}
    return " · ".join(words[v.typing] % {"name": v.name} for v in here)


def open_elsewhere(viewers: list[Viewer]) -> dict[str, str]:
    """The conversations the others have open, each with what its row in the list says."""
    names: dict[str, list[str]] = {}
    for viewer in viewers:
        names.setdefault(viewer.conversation_id, []).append(viewer.name)
    locale = get_locale()
    return {conversation: _("Open: %(names)s") % {"names": format_list(people, locale=locale)}
            for conversation, people in names.items()}


def digest(viewers: list[Viewer], conversation_id: uuid.UUID | None) -> str:
    """A short fingerprint of what the page should show of `viewers` (the others) with
    `conversation_id` open: the poll answers 204 while the page shows it, without rendering a word.
    The page's language is not in it: a page changes language only by loading again."""
    opened = str(conversation_id or "")
    shown = [(v.conversation_id, v.name, v.typing if v.conversation_id == opened else "") for v in viewers]
    return hashlib.blake2b(json.dumps([opened, shown]).encode(), digest_size=8).hexdigest()
