"""The words people read for availability (issue 35): presence and why a member may not receive an
automated assignment, or why a conversation waits, in the page's language."""
from flask_babel import lazy_gettext as _l

PRESENCE_LABELS = {"online": _l("Online"), "away": _l("Away"), "offline": _l("Offline")}
REASON_LABELS = {
    "agent_on_leave": _l("On leave"), "holiday": _l("Holiday"), "outside_shift": _l("Outside shift"),
    "agent_offline": _l("Offline"), "agent_away": _l("Away"), "agent_at_capacity": _l("At capacity"),
    "no_reply": _l("No reply"),
}
