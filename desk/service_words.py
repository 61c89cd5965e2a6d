"""The words people read for service levels (issue 36): each target's name, where a running one
stands against its due time ("Due in 12 min", "Due now", "Breached 5 min ago") and how an ended one
ended, in the page's language. A state is always given in words; its colour (the `tone`) only
repeats it."""
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from babel.dates import format_timedelta
from flask_babel import get_locale, gettext as _, lazy_gettext as _l

from desk.inbox import BREACHING_SOON

KIND_LABELS = {"first_response": _l("First response"), "next_response": _l("Next response"),
               "resolution": _l("Resolution")}
OUTCOME_LABELS = {"met": _l("Met"), "breached": _l("Breached"), "closed": _l("Closed without a reply")}
NOW = timedelta(minutes=1)  # "Due now": less than a minute either side of the due time


@dataclass(frozen=True)
class Standing:
    """A running target against the clock: `tone` is `ok`, `soon` (within 15 minutes or due now)
    or `breached`; `words` say the same."""

    tone: str
    words: str


@lru_cache(maxsize=4096)
def _length(minutes: int, locale) -> str:
    """A whole number of minutes for people, in the largest unit that fits ("12 min", "2 hr",
    "12分钟"): Babel's words, kept per locale (a list shows fifty of them)."""
    return format_timedelta(timedelta(minutes=minutes), granularity="minute", threshold=1, format="short",
                            locale=locale)


def standing(due_at: datetime, now: datetime) -> Standing:
    """Where a running target due at `due_at` stands at `now`."""
    left = due_at - now
    if abs(left) < NOW:
        return Standing("soon", _("Due now"))
    length = _length(round(abs(left) / NOW), get_locale())
    if left < timedelta():
        return Standing("breached", _("Breached %(time)s ago", time=length))
    return Standing("soon" if left <= BREACHING_SOON else "ok", _("Due in %(time)s", time=length))
