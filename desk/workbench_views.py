"""The agents' workbench: the conversation list, the thread, the customer's details with the
changes people make by hand, the cheap "changes since" poll that keeps them live, and the team
board of supervisors and administrators."""
import logging
import uuid
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from flask import Blueprint, flash, g, jsonify, redirect, render_template, request, session, url_for
from babel.dates import format_timedelta
from flask_babel import get_locale, gettext as _, lazy_gettext as _l
from redis.exceptions import RedisError
from sqlalchemy import false, select

from core.api import ApiError, parse_uuid
from core.clock import iso, utcnow
from core.db import db, tenant_row
from core.forms import form_integer
from core.redis import get_redis
from core.text import storable
from core.web import htmx, redirect_to
from desk import drafts, outbound, viewers
from desk.conversations import REASSIGNING_ROLES, UNCHANGED, change_by_hand, get_conversation
from desk.availability_words import PRESENCE_LABELS, REASON_LABELS
from desk.inbox import (LATEST_CHANGE_PROBE, STATUSES, VIEWS, changes_since, latest_change, list_conversations,
                        mark_read)
from desk.merge import candidates as merge_candidates, merge as merge_conversations
from desk.models import CONVERSATION_STATUSES, Member, Message
from desk.panels import BEFORE, chosen_style, provider
from desk.placeholders import first_name
from desk.presence import set_presence
from desk.quick_replies import tenant_replies
from desk.replies import post_message, reply_by_another
from desk.service_timers import timers_of
from desk.service_words import KIND_LABELS, OUTCOME_LABELS, standing
from desk.snooze import preset_until, presets, read_until, snoozed_words
from desk.search import FAR_PAST, FAR_FUTURE, parse_conditions, parse_resume, search_step
from desk.sessions import current_member, probe_with_seat, restricted_session, workbench_required
from desk.team import MemberState, confirmation_needed, member_states, team_board
from desk.timeline import thread

bp = Blueprint("workbench", __name__)
log = logging.getLogger(__name__)

# What people read (lazy: translated when shown, in the request's language).
STATUS_LABELS = {"open": _l("Open"), "pending": _l("Pending"), "resolved": _l("Resolved")}
VIEW_LABELS = {"mine": _l("Mine"), "unassigned": _l("Unassigned"), "all": _l("All"),
               "breaching": _l("Breaching soon")}
TRIGGER_LABELS = {"manual": _l("a manual plan"), "scheduled": _l("a scheduled round"),
                  "message_event": _l("a new message")}
CHANGE_ERRORS = {
    "conversation_changed": _l("Someone changed this conversation meanwhile; this is how it stands now. "
                               "Try again if you still want the change."),
    "reassign_forbidden": _l("Agents take unassigned conversations and let go of their own: ask a supervisor "
                             "to reassign this one."),
    "member_unavailable": _l("That member is inactive or not in this workspace: choose someone else."),
    "invalid_status": _l("Choose open, pending or resolved."),
    "invalid_form": _l("The form was incomplete: reload the page and try again."),
    "invalid_snooze": _l("Choose a time at least 1 minute ahead and at most a year ahead (Beijing time)."),
}
MERGE_ERRORS = {
    "merge_into_itself": _l("Choose another conversation to merge into."),
    "merge_forbidden": _l("Agents merge only two conversations that are both theirs: ask a supervisor."),
    "already_merged": _l("One of these conversations was merged already: choose another."),
    "command_in_flight": _l("An automation rule is changing one of these conversations right now: try again in a "
                            "minute."),
    "conversation_changed": _l("Someone changed this conversation meanwhile: close this and try again."),
    "not_found": _l("That conversation is not in this workspace: choose another."),
    "invalid_form": _l("Choose the conversation to merge into."),
    "customers_differ": _l("These conversations belong to different customers: confirm the merge in its dialog."),
}
SNOOZE_LABELS = {"hour": _l("1 hour"), "tonight": _l("Tonight 18:00"), "tomorrow": _l("Tomorrow 09:00"),
                 "monday": _l("Next Monday 09:00")}
COMPOSER_ERRORS = {
    "conversation_merged": _l("This conversation was merged into another one: reply there."),
    "invalid_message": _l("Write something first (at most 4,000 characters)."),
    "client_message_id_reused": _l("This message was already sent with other text: reload the page and send again."),
    "invalid_form": _l("The form was incomplete: reload the page and try again."),
}
RETRY_ERRORS = {
    "delivery_not_failed": _l("This reply is being sent or was sent already."),
    "no_outbound_endpoint": _l("The channel has no outbound endpoint any more: the reply stays stored only."),
}
SEARCH_ERRORS = {
    "from": _l("Enter the first day as a date from 2000-01-01 to 9998-12-30 (YYYY-MM-DD)."),
    "to": _l("Enter the last day as a date from 2000-01-01 to 9998-12-30 (YYYY-MM-DD)."),
    "range": _l("The last day comes before the first day: swap them."),
    "text": _l("Search for at most 200 characters of ordinary text."), "after": _l("The search changed: search again."),
}
TYPEAHEAD_LIMIT = 10
SEARCH_FIELDS = ("q", "content", "from", "to")  # a search's conditions, as its form and address name them
NO_CHANGE_YET = datetime(2000, 1, 1, tzinfo=UTC)  # where the poll of a tenant without conversations starts
STYLE_SESSION_KEY = "workbench_style"  # a restricted session's own style choice ("" for the defaults)
CONFIRMED = "1"  # the `confirm` field of "Assign anyway": assign to a member who is unavailable or at capacity


def _conversation_link() -> str:
    """The path of a conversation without its id: a list's rows append theirs (one url_for per
    row would be a third of the list's cost)."""
    zero = uuid.UUID(int=0)
    return url_for("workbench.conversation", conversation_id=zero).removesuffix(str(zero))


def _tab() -> tuple[str, str]:
    """The list's status and view from the query string (open / all by default)."""
    status, view = request.args.get("status", "open"), request.args.get("view", "all")
    return (status if status in STATUSES else "open"), (view if view in VIEWS else "all")


def _list_context(status: str, view: str) -> dict:
    """What the list partial shows."""
    member = current_member()
    now = utcnow()
    return {"conversations": list_conversations(member.tenant_id, member.id, status, view, now), "status": status,
            "view": view, "statuses": STATUSES, "views": VIEWS, "status_labels": STATUS_LABELS,
            "view_labels": VIEW_LABELS, "conversation_link": _conversation_link(), "now": now, "standing": standing,
            "snoozed_words": snoozed_words,
            "link_query": "?" + urlencode({"status": status, "view": view}),
            "open_elsewhere": viewers.open_elsewhere(_others())}


def _others(opened: uuid.UUID | None = None, typing: str = "", *, report: bool = False) -> list[viewers.Viewer]:
    """The other members' open conversations and typing (`desk.viewers`), read once per request;
    with `report`, the poll's: also recording the member's own `opened` and `typing`, unless the
    session does not speak for the member."""
    if report or "viewers" not in g:
        member = current_member()
        found = viewers.report(get_redis(), member.tenant_id, member.id, member.display_name, opened, typing,
                               write=report and not restricted_session())
        g.viewers = viewers.others(found, member.id)
    return g.viewers


def _fill(conversation, member) -> dict:
    """The values the composer fills a quick reply's placeholders with (`desk.placeholders`)."""
    name = conversation.customer.name
    return {"customer.name": name, "customer.first_name": first_name(name), "agent.name": member.display_name,
            "conversation.id": str(conversation.id)}


def _conversation_context(conversation, message: str | None = None) -> dict:
    """What the thread and the details panel show."""
    member, timers = current_member(), timers_of(conversation.tenant_id, conversation.id)
    draft = drafts.draft_of(member.id, conversation.id)
    return {"conversation": conversation, "entries": thread(conversation, timers), "change_message": message,
            "timers": timers, "now": utcnow(), "standing": standing, "kind_labels": KIND_LABELS,
            "outcome_labels": OUTCOME_LABELS, "fill": _fill(conversation, member), "draft": draft,
            "may_reassign": member.role in REASSIGNING_ROLES, "conversation_statuses": CONVERSATION_STATUSES,
            "status_labels": STATUS_LABELS, "trigger_labels": TRIGGER_LABELS, "client_message_id": uuid.uuid4(),
            "viewers_notice": viewers.notice(_others(), conversation.id), "as_of": iso(utcnow()),
            "snooze_presets": presets(utcnow()), "snooze_labels": SNOOZE_LABELS, "snoozed_words": snoozed_words,
            "may_merge": member.role in REASSIGNING_ROLES or conversation.assignee_member_id == member.id}


def _pane_context(conversation) -> dict:
    """The conversation's thread and details with the tools of the side panel, before and after
    the customer's profile."""
    tools = provider().tools(current_member(), conversation)
    return {**_conversation_context(conversation), "tools_before": [t for t in tools if t.position == BEFORE],
            "tools_after": [t for t in tools if t.position != BEFORE]}


def _presence_context(opened: uuid.UUID | None) -> dict:
    """What the header's availability control shows (the member's saved choice is `member`'s, from
    the layout's context): the choices, whether this session may change it, the open conversation."""
    return {"presence_labels": PRESENCE_LABELS, "presence_locked": restricted_session(), "opened_id": opened}


def _since(member: Member) -> str:
    """Where the page's changes poll starts: the newest change stamp of the member's tenant."""
    return iso(latest_change(member.tenant_id) or NO_CHANGE_YET)


def _page(conversation=None, search: dict | None = None):
    """The whole workbench, with a conversation open or not, and search results instead of the list."""
    member = current_member()
    context = _pane_context(conversation) if conversation is not None else {}
    replies = [{"title": reply.title, "body": reply.body} for reply in tenant_replies(member.tenant_id)]
    styles = provider().styles(member)
    return render_template("desk/workbench.html", since=_since(member), quick_replies=replies,
                           team_link=member.role in REASSIGNING_ROLES,
                           search=search, search_days=(FAR_PAST.isoformat(), FAR_FUTURE.isoformat()),
                           styles=styles, style=chosen_style(styles, _own_style(member)),
                           **_presence_context(conversation.id if conversation is not None else None),
                           **{**_list_context(*_tab()), **context, **(search or {}),
                              **(_search_query() if search else {})})


def _opened() -> uuid.UUID | None:
    """The conversation that was open when a header form was sent (its hidden `conversation_id`),
    or None for none or one that is not a conversation id."""
    try:
        return parse_uuid(request.form.get("conversation_id", ""), "invalid_form")
    except ApiError:
        return None


def _back(opened: uuid.UUID | None):
    """Back to the page a header form was sent from, without JavaScript: the open conversation or
    the workbench."""
    if opened is None:
        return redirect(url_for("workbench.index"))
    return redirect(url_for("workbench.conversation", conversation_id=opened))


@bp.get("/workbench")
@workbench_required
def index():
    """The workbench; for htmx, the list of one status and view."""
    if htmx:
        return render_template("desk/_conversation_list.html", **_list_context(*_tab()))
    return _page()


def _read(conversation_id: uuid.UUID):
    """The conversation, marked read by the current member (committed)."""
    member = current_member()
    found = get_conversation(member.tenant_id, conversation_id)
    mark_read(member.id, found)
    db.session.commit()
    return found


def _own_style(member: Member) -> str | None:
    """The style key this session shows: a restricted session's own choice once it made one, else
    the member's saved choice."""
    if restricted_session() and STYLE_SESSION_KEY in session:
        return session[STYLE_SESSION_KEY] or None
    return member.workbench_style


@bp.post("/workbench/style")
@workbench_required
def choose_style():
    """Remember the member's choice among the styles on offer; an empty choice restores the defaults.
    A restricted session (impersonation, assistant) keeps its choice to itself, as with the language."""
    member = current_member()
    key = request.form.get("style", "")
    if key and key not in {style.key for style in provider().styles(member)}:
        flash(_("That style is no longer on offer: choose another."), "error")
    else:
        if restricted_session():
            session[STYLE_SESSION_KEY] = key
        else:
            member.workbench_style = key or None
            db.session.commit()
        flash(_("Style applied.") if key else _("Default style restored."), "ok")
    return _back(_opened())


@bp.post("/workbench/presence")
@workbench_required
def presence():
    """Save the member's availability (`presence`: online, away or offline); for htmx the header's
    control again, else back to the page it was sent from. A restricted session is refused with
    403 session_scope_forbidden, any other value with 400 invalid_form; neither changes anything."""
    set_presence(current_member(), request.form.get("presence", ""), restricted=restricted_session())
    db.session.commit()
    if htmx:
        return render_template("desk/_presence.html", **_presence_context(_opened()))
    return _back(_opened())


@bp.get("/workbench/team")
@workbench_required
def team():
    """The team board for supervisors and administrators (an agent is refused, 403 team_forbidden):
    each active member's presence, availability, load and shift, and the waiting queue; for htmx the
    board alone, which the page fetches again when the changes poll reports a change and once a minute
    (presence and heartbeats change no conversation)."""
    member = current_member()
    if member.role not in REASSIGNING_ROLES:
        raise ApiError("team_forbidden", 403)
    context = {"board": team_board(member.tenant_id, utcnow()), "reason_labels": REASON_LABELS,
               **_presence_context(None)}
    if htmx:
        return render_template("desk/_team_board.html", **context)
    return render_template("desk/team.html", since=_since(member), team_link=True, **context)


@bp.get("/workbench/search")
@workbench_required
def search():
    """One bounded step of a search (the first one replaces the list; "continue" appends)."""
    try:
        found = _searched()
    except ApiError as err:
        return _search_answer({"error": SEARCH_ERRORS[err.detail], "continued": False}, 422)
    if found is None:
        return redirect_to(url_for("workbench.index"))
    return _search_answer(found)


def _searched() -> dict | None:
    """One step of the search the address names (None: no condition), as the results show it;
    ApiError for a bad condition."""
    args = request.args
    conditions = parse_conditions(*(args.get(name, "") for name in SEARCH_FIELDS))
    after = parse_resume(args.get("after", ""))
    if conditions.empty():
        return None
    step = search_step(current_member().tenant_id, conditions, after)
    searched = (form_integer(args.get("seen")) or 0) + step.scanned
    found = (form_integer(args.get("found")) or 0) + len(step.matches)
    more = url_for("workbench.search", **{name: args.get(name, "") for name in SEARCH_FIELDS},
                   after=step.resume_after, seen=searched, found=found) if step.resume_after else None
    return {"step": step, "more_url": more, "searched": searched, "found": found,
            "continued": htmx and after is not None}


def _search_answer(context: dict, status: int = 200):
    """The search's partial for htmx; without it the whole workbench with the results as its list."""
    if htmx:
        return render_template("desk/_search.html", status_labels=STATUS_LABELS,
                               conversation_link=_conversation_link(), **context, **_search_query()), status
    return _page(search=context), status


def _search_query() -> dict:
    """The search's conditions as the address carries them: the form's values, and the query its
    result links append (so a reload of an opened result lands on the same results)."""
    values = {name: request.args.get(name, "")[:200] for name in SEARCH_FIELDS}
    return {"search_values": values, "link_query": "?" + urlencode(values, quote_via=quote)}


@bp.get("/workbench/conversations/<uuid:conversation_id>")
@workbench_required
def conversation(conversation_id: uuid.UUID):
    """One conversation: its thread and, out of band, its details for htmx; the whole page otherwise,
    with the list of the status and view its address names, or the results of its search."""
    found = _read(conversation_id)
    if htmx:
        return render_template("desk/_conversation.html", details_oob="pane", **_pane_context(found))
    try:  # opened from search results: the same results beside it
        results = _searched()
    except ApiError:
        results = None
    return _page(found, search=results)


@bp.get("/workbench/conversations/<uuid:conversation_id>/thread")
@workbench_required
def live_thread(conversation_id: uuid.UUID):
    """The thread again (the poll saw this conversation change) with its details out of band."""
    found = _read(conversation_id)
    return render_template("desk/_thread_live.html", details_oob=True, **_conversation_context(found))


def _instant(text: str) -> datetime:
    """An ISO 8601 instant with its offset, in UTC; 400 invalid_since for anything else, an instant
    without an offset or one no UTC datetime can hold (year 1 at +14:00, year 9999 at -14:00)."""
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            raise ValueError("no offset")
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ApiError("invalid_since", 400) from None


@bp.get("/workbench/changes")
@probe_with_seat(LATEST_CHANGE_PROBE)
@workbench_required
def changes():
    """204 when none of the tenant's conversations changed after `since` (the session check's
    statement read the newest stamp: no statement of its own); else the newest stamp and the ids
    of the conversations that changed (the page then refreshes what shows them).

    A page that shows who else is here sends `presence` (the fingerprint of what it shows, "" at
    first), `open` (its open conversation) and `typing`: the poll records them (`desk.viewers`) and
    also answers 200 when what the page should show of the others changed: `presence`, `notice`
    (the thread header's words) and `open_elsewhere` (the list's marks by conversation id)."""
    since = _instant(request.args.get("since", ""))
    shown = _shown_of_others(request.args["presence"]) if "presence" in request.args else {}
    latest = g.get("seat_probe_result")
    found = None if latest is not None and latest <= since else changes_since(current_member().tenant_id, since)
    if found is None and not shown:
        return "", 204
    stamp, ids = found or (since, [])
    return jsonify(since=iso(stamp), conversation_ids=[str(i) for i in ids], **shown)


def _shown_of_others(fingerprint: str) -> dict:
    """What the page should show of the other members, after recording the poll's own report; {}
    while the page's `fingerprint` says it shows that already."""
    try:
        opened = parse_uuid(request.args.get("open", ""), "invalid_form")
    except ApiError:
        opened = None
    others = _others(opened, request.args.get("typing", ""), report=True)
    current = viewers.digest(others, opened)
    if current == fingerprint:
        return {}
    return {"presence": current, "notice": viewers.notice(others, opened),
            "open_elsewhere": viewers.open_elsewhere(others)}


@bp.post("/workbench/conversations/<uuid:conversation_id>/draft")
@workbench_required
def save_draft(conversation_id: uuid.UUID):
    """Keep what the member typed in the composer (empty: forget it); 204. The composer's script
    posts it at most every 2 seconds while the member types."""
    member = current_member()
    client_message_id = parse_uuid(request.form.get("client_message_id", ""), "invalid_form")
    drafts.save_draft(member.tenant_id, member.id, conversation_id, request.form.get("text", ""),
                      request.form.get("private_note") == "on", client_message_id, utcnow())
    db.session.commit()
    return "", 204


@bp.post("/workbench/conversations/<uuid:conversation_id>/messages")
@workbench_required
def send(conversation_id: uuid.UUID):
    """Store a reply or a private note from the composer; the thread again, or 422 with why (the
    composer keeps its text)."""
    member = current_member()
    try:
        client_message_id = parse_uuid(request.form.get("client_message_id", ""), "invalid_form")
        question = _someone_replied(member, conversation_id) if htmx else None
        if question is not None:
            return question, 422, {"HX-Retarget": "#composer-question", "HX-Reswap": "innerHTML"}
        _message, delivery_id = post_message(member.tenant_id, member, conversation_id, request.form.get("text", ""),
                                             request.form.get("private_note") == "on", client_message_id)
    except ApiError as err:
        if err.code not in COMPOSER_ERRORS:
            raise
        db.session.rollback()
        if not htmx:
            flash(str(COMPOSER_ERRORS[err.code]), "error")
            return redirect(url_for("workbench.conversation", conversation_id=conversation_id))
        return str(COMPOSER_ERRORS[err.code]), 422, {"HX-Retarget": "#composer-error", "HX-Reswap": "innerHTML"}
    db.session.commit()
    if delivery_id is not None:
        _queue_delivery(delivery_id)
    if not htmx:
        return redirect(url_for("workbench.conversation", conversation_id=conversation_id))
    found = get_conversation(member.tenant_id, conversation_id)
    return (render_template("desk/_thread_live.html", **_conversation_context(found)), 200,
            {"HX-Trigger": "conversations-changed"})


def _someone_replied(member: Member, conversation_id: uuid.UUID) -> str | None:
    """The question "Someone else replied" when another member replied after the thread the
    member saw at their first keystroke (`replied_after`, set by the composer's script), unless they
    answered it with "Send anyway" or write a private note; None: send."""
    after = request.form.get("replied_after", "")
    if not after or request.form.get("send_anyway") == CONFIRMED or request.form.get("private_note") == "on":
        return None
    try:
        moment = _instant(after)
    except ApiError:
        raise ApiError("invalid_form", 400) from None
    found = reply_by_another(member.tenant_id, conversation_id, member.id, moment)
    if found is None:
        return None
    name, at = found
    now = utcnow()
    return render_template("desk/_someone_replied.html", name=name, as_of=iso(now),
                           when=format_timedelta(at - now, add_direction=True, locale=get_locale()))


def _queue_delivery(delivery_id: uuid.UUID) -> None:
    """Queue a committed reply's delivery; when Redis is out of reach the tick's sweeper queues it."""
    try:
        outbound.enqueue_delivery(delivery_id)
    except RedisError:
        log.error("could not enqueue reply delivery %s; the sweeper will", delivery_id)


def _delivery_answer(message_id: uuid.UUID, message: str | None = None, status: int = 200):
    """A reply's delivery state (it polls itself while sending)."""
    tenant_id = current_member().tenant_id
    found = tenant_row(Message, tenant_id, message_id)
    if not htmx:
        if message:
            flash(str(message), "error")
        return redirect(url_for("workbench.conversation", conversation_id=found.conversation_id))
    latest = outbound.latest_deliveries(tenant_id, [found.id]).get(found.id)
    return render_template("desk/_delivery.html", m=found, delivery=latest, delivery_message=message), status


@bp.get("/workbench/messages/<uuid:message_id>/delivery")
@workbench_required
def delivery_state(message_id: uuid.UUID):
    """Sending, sent or failed (with retry)."""
    return _delivery_answer(message_id)


@bp.post("/workbench/messages/<uuid:message_id>/retry")
@workbench_required
def retry_delivery(message_id: uuid.UUID):
    """Send a reply whose delivery failed again."""
    try:
        delivery_id = outbound.retry(current_member().tenant_id, message_id)
    except ApiError as err:
        if err.code not in RETRY_ERRORS:
            raise
        db.session.rollback()
        return _delivery_answer(message_id, RETRY_ERRORS[err.code], 422)
    db.session.commit()
    _queue_delivery(delivery_id)
    return _delivery_answer(message_id)


def _expected_state() -> tuple[uuid.UUID | None, str]:
    """The assignee and status the person saw when they chose the change (hidden fields): the
    state the change expects to find."""
    assignee, status = request.form.get("seen_assignee", ""), request.form.get("seen_status", "")
    if status not in CONVERSATION_STATUSES:
        raise ApiError("invalid_form", 400)
    return (parse_uuid(assignee, "invalid_form") if assignee else None), status


def _change(conversation_id: uuid.UUID, **change):
    """Apply one change by hand and answer with the conversation as it now stands."""
    member = current_member()
    try:
        expected_assignee, expected_status = _expected_state()
        change_by_hand(member.tenant_id, member, conversation_id, expected_assignee, expected_status, **change)
    except ApiError as err:
        if err.code not in CHANGE_ERRORS:
            raise
        db.session.rollback()
        return _answer(conversation_id, CHANGE_ERRORS[err.code], 422)
    db.session.commit()
    return _answer(conversation_id)


def _answer(conversation_id: uuid.UUID, message: str | None = None, status: int = 200):
    """The details panel with the thread out of band (the list refreshes on the event) or, without
    htmx, the conversation's page."""
    if not htmx:
        if message:
            flash(str(message), "error")
        return redirect(url_for("workbench.conversation", conversation_id=conversation_id))
    found = get_conversation(current_member().tenant_id, conversation_id)
    headers = {"HX-Trigger": "conversations-changed"} if status == 200 else {}
    return (render_template("desk/_details_answer.html", **_conversation_context(found, message)), status,
            headers)


@bp.post("/workbench/conversations/<uuid:conversation_id>/assignee")
@workbench_required
def assign(conversation_id: uuid.UUID):
    """Assign to me, to another active member (supervisors, administrators), or to nobody. While the
    tenant's availability policy is on, a supervisor's choice of a member who is unavailable or at
    capacity is confirmed first: without `confirm` the answer is the confirmation, in place of the
    typeahead's options, and nothing changes; "Assign anyway" sends it again with `confirm`."""
    member = current_member()
    choice = request.form.get("assignee", "")
    if choice == "me":
        target = member.id
    elif choice == "none":
        target = None
    else:
        try:
            target = parse_uuid(choice, "invalid_form")
        except ApiError:
            return _answer(conversation_id, CHANGE_ERRORS["invalid_form"], 422)
        if member.role in REASSIGNING_ROLES and request.form.get("confirm") != CONFIRMED:
            warned = confirmation_needed(member.tenant_id, target, utcnow())
            if warned is not None:
                return _confirmation(conversation_id, warned)
    return _change(conversation_id, assignee=target)


def _confirmation(conversation_id: uuid.UUID, state: MemberState):
    """The question before assigning to a member who is unavailable or at capacity, with the state
    the person saw kept for the assignment's compare-and-swap; for htmx it replaces the typeahead's
    options."""
    found = get_conversation(current_member().tenant_id, conversation_id)
    html = render_template("desk/_team_confirm.html", conversation=found, state=state,
                           reason_labels=REASON_LABELS, confirmed=CONFIRMED,
                           seen_assignee=request.form.get("seen_assignee", ""),
                           seen_status=request.form.get("seen_status", ""))
    return html, 200, ({"HX-Retarget": "#assignee-options", "HX-Reswap": "innerHTML"} if htmx else {})


@bp.post("/workbench/conversations/<uuid:conversation_id>/status")
@workbench_required
def set_status(conversation_id: uuid.UUID):
    """Open, pending or resolved."""
    return _change(conversation_id, assignee=UNCHANGED, status=request.form.get("status", ""))


@bp.post("/workbench/conversations/<uuid:conversation_id>/snooze")
@workbench_required
def snooze(conversation_id: uuid.UUID):
    """Pending until a preset's time (`preset`) or the time typed (`until`, Beijing time)."""
    now = utcnow()
    try:
        preset = request.form.get("preset", "")
        until = preset_until(preset, now) if preset else read_until(request.form.get("until", ""), now)
        if until is None:
            raise ApiError("invalid_snooze", 400)
    except ApiError as err:
        return _answer(conversation_id, CHANGE_ERRORS[err.code], 422)
    return _change(conversation_id, snooze=until)


def _merge_form(source, **shown) -> str:
    """The dialog's form: the search, the "Merge into" choices (the customer's other conversations)
    and `shown` (a refusal's message, or the question about two customers)."""
    return render_template("desk/_merge_form.html", conversation=source, status_labels=STATUS_LABELS,
                           merge_candidates=merge_candidates(source.tenant_id, source), **shown)


@bp.get("/workbench/conversations/<uuid:conversation_id>/merge")
@workbench_required
def merge_form(conversation_id: uuid.UUID):
    """The "Merge conversation" dialog's form, loaded when the dialog opens."""
    return _merge_form(get_conversation(current_member().tenant_id, conversation_id))


@bp.get("/workbench/conversations/<uuid:conversation_id>/merge-candidates")
@workbench_required
def merge_options(conversation_id: uuid.UUID):
    """The "Merge into" choices for `q` (a customer's name or a conversation id; none: the
    customer's other conversations), as the combobox's options."""
    member = current_member()
    found = get_conversation(member.tenant_id, conversation_id)
    return render_template("desk/_merge_options.html", status_labels=STATUS_LABELS,
                           merge_candidates=merge_candidates(member.tenant_id, found, request.args.get("q", "")))


@bp.post("/workbench/conversations/<uuid:conversation_id>/merge")
@workbench_required
def merge(conversation_id: uuid.UUID):
    """Merge this conversation into the chosen one; the target's page (htmx: by redirect), or the
    dialog again with why not, or with the question when the customers differ."""
    member = current_member()
    source = get_conversation(member.tenant_id, conversation_id)
    chosen = request.form.get("target", "")
    try:
        target_id = parse_uuid(chosen, "invalid_form")
        _assignee, seen_status = _expected_state()
        target = merge_conversations(member.tenant_id, member, source.id, target_id, seen_status,
                                     request.form.get("confirm") == chosen)
    except ApiError as err:
        db.session.rollback()
        if err.code not in MERGE_ERRORS:
            raise
        if not htmx:
            flash(str(MERGE_ERRORS[err.code]), "error")
            return redirect(url_for("workbench.conversation", conversation_id=source.id))
        question = get_conversation(member.tenant_id, target_id) if err.code == "customers_differ" else None
        html = _merge_form(source, merge_message=None if question else MERGE_ERRORS[err.code], confirm_target=question,
                           selected=chosen)
        return html, 422, {"HX-Retarget": "#merge-body", "HX-Reswap": "innerHTML"}
    db.session.commit()
    address = url_for("workbench.conversation", conversation_id=target.id)
    return ("", 204, {"HX-Redirect": address}) if htmx else redirect(address)


@bp.get("/workbench/conversations/<uuid:conversation_id>/assignees")
@workbench_required
def assignees(conversation_id: uuid.UUID):
    """Typeahead: the tenant's active members whose name holds `q`, for a supervisor to choose from,
    each with their presence, availability and load."""
    member = current_member()
    if member.role not in REASSIGNING_ROLES:
        raise ApiError("reassign_forbidden", 403)
    found = get_conversation(member.tenant_id, conversation_id)
    typed = request.args.get("q", "").strip()[:80]
    query = select(Member).where(Member.tenant_id == member.tenant_id, Member.active.is_(True))
    if not storable(typed):  # no name holds a NUL or a lone surrogate
        typed, query = "", query.where(false())
    if typed:
        query = query.where(Member.display_name.icontains(typed, autoescape=True))
    members = list(db.session.scalars(query.order_by(Member.display_name).limit(TYPEAHEAD_LIMIT)))
    states = member_states(member.tenant_id, members, utcnow())
    return render_template("desk/_assignees.html", conversation=found, states=states, typed=typed,
                           presence_labels=PRESENCE_LABELS, reason_labels=REASON_LABELS)
