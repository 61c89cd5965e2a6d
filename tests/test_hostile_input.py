"""Hostile input is never a 5xx. The app's URL map is walked: every GET route is fetched (by the
administrator, plainly and as HTMX, and anonymously), every form those pages hold is posted with
one field at a time replaced by hostile values, every JSON endpoint is posted its body with one
value at a time replaced, every path segment that is not a UUID and every query argument a view
reads gets the hostile values too, and every page is fetched again afterwards, so a value that was
stored and breaks a page shows as well. A route the walk does not reach fails the coverage tests,
so a new form or endpoint is fuzzed from the day it lands."""
import ast
import copy
import inspect
import itertools
import json
import re
import time
import uuid
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import quote_from_bytes, urlsplit

from sqlalchemy import select

from core.config import PROJECT_ROOT
from core.crypto import hmac_sha256_hex
from core.db import db
from desk.models import Member, User
from studio.catalog import PUBLISH_PERMISSIONS
from studio.models import StudioActionBinding
from tests.conftest import PASSWORD, csrf_from
from tests.support.estate import Estate, rule_path, url_rules
from tests.support.preview import body as preview_body, sample
from tests.support.rule_runs import CONFIRM
from tests.support.rules import weekly_rule
from tests.support.studio import ORIGIN, sample_definition

HTMX = {"HX-Request": "true"}
LONG = 100_000
LAYERS = ("core", "desk", "studio", "openapi", "rules", "jobs", "app")

# One field at a time takes each of these: digits Python calls digits but int() refuses or
# cannot hold, far dates, NUL, a lone surrogate (sent as its WTF-8 bytes, as a hostile client
# would), 100 KB, direction controls and markup.
HOSTILE_TEXT = ["²", "١٢٣", "１２", "9" * 5000, "-" + "9" * 5000, "1e999", "NaN",
                "9999-12-31T23:59", "0001-01-01T00:00", "9999-12-31", "\x00", "a\x00b", "\ud800",
                "x" * LONG, "", "\u202e<b>\u0085", "../../etc/passwd"]
# Query arguments and `next` also take instants and days at the edge of what a datetime holds (an
# offset pushes them past it), days before the search's first day, a resume position built on them,
# and what a header or a redirect cannot carry (CR/LF, DEL, a line separator).
HOSTILE_QUERY = [*HOSTILE_TEXT, "0001-01-01", "1999-12-31", "0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00+00:01",
                 "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59.999999-00:01",
                 "0001-01-01T00:00:00+14:00|00000000-0000-0000-0000-000000000000", "/a\nb", "/x\r\ny", "\r\n",
                 "/a\x7fb", "/a\u2028b", "//evil.example/x", "/\\evil.example", "https://evil.example/"]
# JSON values where any scalar, list or object may stand; RAW ones are number literals that
# json.dumps cannot write (a 5,000-digit integer, a float that overflows to infinity).
RAW = {"__raw_big__": "1" + "0" * 5000, "__raw_inf__": "1e400", "__raw_negzero__": "-0.0"}
HOSTILE_JSON = [*HOSTILE_TEXT, *RAW, None, True, 0, -1, 2 ** 63, 10 ** 400, 1.5, [], [1, "a", None],
                {}, {"a": {"b": []}}, "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "+275760-09-13T00:00:00Z"]
# Whole bodies: not JSON, not an object, not UTF-8, nested past any stack, a name twice.
HOSTILE_BODIES = [b"", b"null", b"[]", b"1e400", b'"\\ud800"', b"\xff\xfe", b"{" * 100_000 + b"}" * 100_000,
                  b"[" * 5_000 + b"]" * 5_000, b'{"a": 1, "a": 2}', "{}".encode("utf-16"), b"{}\x00"]


# --- routes ----------------------------------------------------------------------------------

def _text_arguments(rule) -> list[str]:
    """The path arguments that are free text (a UUID converter refuses anything else itself)."""
    return [name for converter, name in re.findall(r"<(?:(\w+)[^:>]*:)?(\w+)>", rule.rule) if converter != "uuid"]


def _is_json_api(rule) -> bool:
    return rule.rule.startswith("/api/")


# The query arguments views read (test_every_header_and_query_argument_a_view_reads_is_fuzzed
# keeps this whole).
QUERY_ARGUMENTS = {
    "knowledge.index": ["cursor"], "workbench.index": ["view", "status"],
    "workbench.changes": ["since", "presence", "open", "typing"], "workbench.merge_options": ["q"],
    "workbench.search": ["q", "content", "from", "to", "after", "seen", "found"],
    "workbench.conversation": ["status", "view", "q", "content", "from", "to", "after", "seen", "found"], "workbench.assignees": ["q"], "studio_api.knowledge_options": ["cursor"],
    "studio.app_page": ["version"], "studio.generate_knowledge": ["cursor"], "rules.new_rule": ["draft", "ai"],
    "rules.rule_page": ["revision"], "open_api.list_customers": ["after"], "open_api.list_records": ["after"],
    "desk.login": ["next"], "desk.select_tenant": ["next"], "service_levels.report": ["days"],
    "service_levels_api.report": ["days"], "studio_api.compare_versions": ["from", "to"],
    "studio.compare_page": ["from", "to"],
}


def _get(estate: Estate, rule, path: str, who=None, headers=None):
    """GET as the administrator (the Open API with its bearer token)."""
    if rule.rule.startswith("/api/v1/open"):
        return estate.anonymous.get(path, headers={"Authorization": f"Bearer {estate.open_token}"})
    return (who or estate.admin).get(path, headers=headers)


def _walk_pages(app, estate: Estate, failures: list) -> list[tuple[object, str, str]]:
    """Fetch every GET route (administrator plain and HTMX, anonymous); (client, page URL, HTML)."""
    pages = []
    for rule in url_rules(app, "GET"):
        path = rule_path(rule, estate.values)
        for who, headers in ((estate.admin, None), (estate.admin, HTMX), (estate.anonymous, None)):
            response = _get(estate, rule, path, who, headers)
            _check(failures, response, "GET", path, headers or {})
            if response.mimetype == "text/html":
                pages.append((who, path, response.get_data(as_text=True)))
    return pages


def _check(failures: list, response, *what) -> None:
    if response.status_code >= 500:
        failures.append(" ".join([str(response.status_code), *[_short(part) for part in what]]))


def _report(failures: list) -> str:
    return f"{len(failures)} answers were 5xx:\n" + "\n".join(failures[:40])


def _short(value):
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:100]}… ({len(text)} characters)"


# --- forms -----------------------------------------------------------------------------------

@dataclass
class Submission:
    """One way a page posts a form: where, as HTMX or not, the fields and their values."""
    who: object
    action: str
    htmx: bool
    names: list
    pairs: list
    submitter: str | None = None


class _Forms(HTMLParser):
    """The POST forms of a page with their fields, as a browser would submit them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms, self._form, self._select, self._options, self._textarea = [], None, None, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            method = (a.get("method") or "get").lower()
            if method == "post" or "hx-post" in a:
                self._form = {"action": a.get("hx-post") or a.get("action"), "htmx": "hx-post" in a,
                              "names": [], "pairs": [], "submitters": [], "script": a.get("data-draft-url")}
                self.forms.append(self._form)
            return
        if self._form is None or "disabled" in a:
            return
        name = a.get("name")
        kind = (a.get("type") or ("submit" if tag == "button" else "text")).lower()
        if tag in ("button", "input") and kind in ("submit", "image"):
            self._form["submitters"].append((name, a.get("value", ""), a.get("hx-post") or a.get("formaction"),
                                             "hx-post" in a))
        elif tag == "input" and name and kind not in ("button", "reset"):
            self._name(name)
            if kind not in ("checkbox", "radio") or "checked" in a:
                self._form["pairs"].append((name, a.get("value", "on" if kind in ("checkbox", "radio") else "")))
        elif tag == "select" and name:
            self._name(name)
            self._select, self._options = (name, "multiple" in a), []
        elif tag == "option" and self._select:
            self._options.append((a.get("value"), "selected" in a))
        elif tag == "textarea" and name:
            self._name(name)
            self._textarea = [name, ""]

    def handle_data(self, data):
        if self._textarea:
            self._textarea[1] += data
        elif self._select and self._options and self._options[-1][0] is None:
            self._options[-1] = (data.strip(), self._options[-1][1])

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "textarea" and self._textarea:
            self._form["pairs"].append(tuple(self._textarea))
            self._textarea = None
        elif tag == "select" and self._select:
            (name, multiple), chosen = self._select, [value for value, selected in self._options if selected]
            if not chosen and not multiple and self._options:
                chosen = [self._options[0][0]]
            self._form["pairs"].extend((name, value) for value in chosen)
            self._select = None

    def _name(self, name: str) -> None:
        if name not in self._form["names"]:
            self._form["names"].append(name)


def _submissions(who, page: str, html: str) -> list[Submission]:
    """Each way each POST form of the page can be sent (its default, every submit button, and the
    script's own post of its fields where the form names one)."""
    found = []
    parser = _Forms()
    parser.feed(html)
    for form in parser.forms:
        ways = [(None, "", None, False)] if not form["submitters"] else form["submitters"]
        for name, value, action, htmx in ways:
            pairs = list(form["pairs"]) + ([(name, value)] if name else [])
            names = form["names"] + ([name] if name and name not in form["names"] else [])
            target = action or form["action"] or page
            found.append(Submission(who, target, htmx or (action is None and form["htmx"]), names, pairs,
                                    f"{name}={value}" if name else None))
        if form["script"]:  # the composer's script posts the same fields as the draft
            found.append(Submission(who, form["script"], False, form["names"], list(form["pairs"]), "draft"))
    return found


def _form_body(pairs: list) -> bytes:
    return "&".join(f"{quote_from_bytes(n.encode('utf-8', 'surrogatepass'))}="
                    f"{quote_from_bytes(v.encode('utf-8', 'surrogatepass'))}" for n, v in pairs).encode()


def _mutations(submission: Submission, names: list):
    """(label, pairs): each named field set to each hostile value, sent twice, left out; an
    `op`-like value (`prefix:argument`) also gets each hostile argument."""
    for name in names:
        others = [(n, v) for n, v in submission.pairs if n != name]
        baseline = next((v for n, v in submission.pairs if n == name), "")
        for value in HOSTILE_TEXT:
            yield f"{name}={_short(value)}", others + [(name, value)]
            if ":" in baseline:
                yield f"{name}=…:{_short(value)}", others + [(name, f"{baseline.split(':')[0]}:{value}")]
        yield f"{name} twice", others + [(name, "1"), (name, "2")]
        yield f"{name} left out", others


def _post_form(submission: Submission, pairs: list, path: str | None = None):
    headers = {"Origin": "http://localhost", **(HTMX if submission.htmx else {})}
    return submission.who.post(path or submission.action, data=_form_body(pairs), headers=headers,
                               content_type="application/x-www-form-urlencoded")


def _fuzz_forms(app, submissions: list[Submission], failures: list) -> None:
    """Every field (and free-text path argument) of the first way each form is sent; only the
    submit button of the other ways. The forms that change the session go last."""
    adapter = app.url_map.bind("localhost")
    last = {"desk.select_tenant", "desk.change_password", "desk.logout"}
    ordered = sorted(submissions, key=lambda s: adapter.match(urlsplit(s.action).path, "POST")[0] in last)
    seen = set()
    for submission in ordered:
        endpoint, arguments = adapter.match(urlsplit(submission.action).path, "POST")
        shape = (endpoint, tuple(submission.names))
        if shape in seen:
            names = [submission.submitter.split("=")[0]] if submission.submitter else []
        else:
            names = submission.names
            rule = next(r for r in app.url_map.iter_rules() if r.endpoint == endpoint)
            for name in _text_arguments(rule):
                for value in HOSTILE_TEXT:
                    path = rule_path(rule, {k: str(v) for k, v in arguments.items()}, (name, value))
                    _check(failures, _post_form(submission, submission.pairs, path), "POST", endpoint, name, value)
        seen.add(shape)
        for label, pairs in _mutations(submission, names):
            _check(failures, _post_form(submission, pairs), "POST", endpoint, label)


# --- JSON endpoints --------------------------------------------------------------------------

def _json_bodies(estate: Estate) -> dict:
    """A valid body of every JSON POST route (test_every_post_route_is_fuzzed keeps this whole)."""
    v = estate.values
    definition = sample_definition()
    weekly = weekly_rule(*_agents())
    return {
        "studio_api.create": {"definition": definition},
        "studio_api.new_version": {"definition": definition},
        "studio_api.simulate": {"version": 2, "input": {"title": "Sample", "amount": 250, "priority": "low",
                                                        "due": "2026-12-01", "urgent": True}},
        "studio_api.publish": {"version": 2, "expected_active_version": 1, "permissions": PUBLISH_PERMISSIONS},
        "studio_api.disable": {},
        "studio_api.create_record": {"version": 1, "input": {"title": "Broken phone", "amount": 250},
                                     "idempotency_key": str(uuid.uuid4())},
        "studio_api.generate": {"prompt": "A returns form.", "extension_id": v["app_id"]},
        "rules_api.save_rule": {"rule_id": v["rule_id"], "expected_revision": 1, "definition": weekly},
        "rules_api.publish_rule": {"revision": 1, "expected_active_revision": 1, "confirm": True,
                                   "execution_mode": "plan_only",
                                   "permissions": ["conversation.read_for_plan", "automation.schedule_plan"]},
        "rules_api.pause_rule": {},
        "rules_api.plan_rule": {},
        "rules_api.execute_plan": CONFIRM,
        "rules_api.automation_preview": preview_body(weekly, [sample("s-1", assignee_ref=weekly["slots"][0]
                                                                   ["assignee_ref"])]),
        "desk_api.inbound_message": {"message_id": "m-1", "text": "Where is my parcel?",
                                     "customer": {"external_id": "c-9", "name": "Wang Fang",
                                                  "phone": "13800138000", "email": "wang@example.cn"}},
        "open_api.create_record": {"data": {"title": "From the CRM", "amount": 3}},
        "availability_api.save_policy": {"policy": {
            "enabled": True, "default_capacity": 8, "fallback_after_minutes": 5, "no_reply_minutes": 10,
            "offline_policy": "release_after", "release_after_minutes": 30}},
        "availability_api.save_schedule": {"capacity": 3, "shifts": [{"weekdays": [1, 5], "start": "22:00",
                                                                     "end": "06:00"}],
                                           "leave": [{"from": "2026-01-30", "to": "2026-02-02"}]},
        "availability_api.replace_calendar": {"calendar": [
            {"date": "2026-10-01", "kind": "holiday", "name": "国庆节", "as_weekday": None},
            {"date": "2026-10-10", "kind": "workday", "name": "国庆节调休", "as_weekday": 5}]},
        "service_levels_api.save_settings": {"policies": [
            {"channel_id": None, "first_response_minutes": 30, "next_response_minutes": 60,
             "resolution_minutes": 2880, "hours": "business"}],
            "hours": [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"}]},
        "studio_api.action_operation": [
            {"operation": "run", "version": 1, "record_id": v["record_id"], "action_key": "crm",
             "binding_id": _binding_id(), "confirm": True},
            {"operation": "bind", "version": 1, "action_key": "crm", "endpoint": "https://crm.example.com/hook",
             "bearer_token": "abc.def", "confirm": True},
            {"operation": "bind", "version": 1, "action_key": "crm", "enabled": False}],
    }


def _binding_id() -> str:
    return str(db.session.scalar(select(StudioActionBinding.id).where(StudioActionBinding.enabled.is_(True))))


def _agents() -> list:
    return [db.session.query(Member).join(User).filter(User.email == email).one()
            for email in ("first@test.example", "second@test.example")]


def _leaves(value, path=()):
    """Every path inside a JSON value (objects' members and lists' items, containers too)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))


def _replaced(body, path: tuple, value):
    changed = copy.deepcopy(body)
    if not path:
        return value
    holder = changed
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return changed


def _dump(value) -> bytes:
    text = json.dumps(value)
    for marker, literal in RAW.items():
        text = text.replace(json.dumps(marker), literal)
    return text.encode("utf-8", "surrogatepass")


def _json_mutations(body: dict):
    """(label, raw body): each value replaced by each hostile value, a hostile extra member, and
    hostile whole bodies."""
    for path in _leaves(body):
        for value in HOSTILE_JSON:
            yield f"{'/'.join(map(str, path)) or '$'}={_short(value)}", _dump(_replaced(body, path, value))
    for value in HOSTILE_JSON[:8]:
        yield f"extra={_short(value)}", _dump({**body, "extra\x00\ud800": value})
    for raw in HOSTILE_BODIES:
        yield f"body={_short(raw)}", raw


def _post_json(estate: Estate, rule, path: str, raw: bytes, headers: dict | None = None):
    """POST a raw JSON body the way the route's callers do: the console same-origin with its
    session, the Open API with its bearer token and a key, a channel signing what it sends."""
    if rule.endpoint == "open_api.create_record":
        sent = {"Authorization": f"Bearer {estate.open_token}", "Idempotency-Key": str(uuid.uuid4()),
                **(headers or {})}
        return estate.anonymous.post(path, data=raw, headers=sent, content_type="application/json")
    if rule.endpoint == "desk_api.inbound_message":
        stamp = str(int(time.time()))
        signature = hmac_sha256_hex(estate.channel_secret, stamp.encode() + b"." + raw)
        sent = {"X-Channel-Timestamp": stamp, "X-Channel-Signature": f"v1={signature}", **(headers or {})}
        return estate.anonymous.post(path, data=raw, headers=sent, content_type="application/json")
    return estate.admin.post(path, data=raw, headers={**ORIGIN, **(headers or {})}, content_type="application/json")


def _header_value(text: str) -> str:
    """How a server hands a header's UTF-8 bytes to WSGI (as Latin-1, PEP 3333)."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


# The request headers views read (test_every_header_and_query_argument_a_view_reads_is_fuzzed
# keeps this whole); every other JSON route is the console's, which reads the Origin.
HEADERS_READ = {"open_api.create_record": ["Idempotency-Key", "Authorization"],
                "desk_api.inbound_message": ["X-Channel-Timestamp", "X-Channel-Signature"]}
CONSOLE_HEADERS = ["Origin"]
PAGE_HEADERS = ["HX-Request"]  # read by every page's error answer (core/api.py)


def _fuzz_json(app, estate: Estate, failures: list) -> None:
    bodies = _json_bodies(estate)
    for rule in url_rules(app, "POST"):
        if not _is_json_api(rule):
            continue
        path = rule_path(rule, estate.values)
        body, *others = bodies[rule.endpoint] if isinstance(bodies[rule.endpoint], list) else [bodies[rule.endpoint]]
        for each in (body, *others):  # an endpoint of several operations: each one's body
            for label, raw in _json_mutations(each):
                _check(failures, _post_json(estate, rule, path, raw), "POST", rule.endpoint, label)
        for header in HEADERS_READ.get(rule.endpoint, CONSOLE_HEADERS):
            for value in HOSTILE_TEXT:
                response = _post_json(estate, rule, path, _dump(body), {header: _header_value(value)})
                _check(failures, response, "POST", rule.endpoint, header, value)


def _fuzz_gets(app, estate: Estate, failures: list) -> None:
    """Hostile text in every free-text path argument, every header a page reads, and every query
    argument a view reads (as everyone who walks)."""
    for rule in url_rules(app, "GET"):
        for value in HOSTILE_TEXT:
            for name in _text_arguments(rule):
                path = rule_path(rule, estate.values, (name, value))
                _check(failures, _get(estate, rule, path), "GET", rule.endpoint, name, value)
            if not _is_json_api(rule):
                for header in PAGE_HEADERS:
                    response = _get(estate, rule, rule_path(rule, estate.values), headers={header: _header_value(value)})
                    _check(failures, response, "GET", rule.endpoint, header, value)
        for value in HOSTILE_QUERY:
            encoded = quote_from_bytes(value.encode("utf-8", "surrogatepass"), safe="")
            for name in QUERY_ARGUMENTS.get(rule.endpoint, []):
                path = f"{rule_path(rule, estate.values)}?{name}={encoded}"
                for who in estate.walkers():
                    _check(failures, _get(estate, rule, path, who), "GET", rule.endpoint, name, value)


# The routes that read `next` (test_every_route_that_takes_next_is_fuzzed keeps this whole): the
# form each one posts, and who posts it. Login logs in afresh each time, as the administrator (two
# tenants: the choice comes next) and as the agent (straight in).
NEXT_ROUTES = {
    "desk.login": lambda estate: [(None, {"email": email, "password": PASSWORD})
                                  for email in (estate.values["admin_email"], "first@test.example")],
    "desk.select_tenant": lambda estate: [(estate.admin, {"tenant_id": estate.values["tenant_id"]})],
    "desk.switch_locale": lambda estate: [(who, {"locale": "en"}) for who in estate.walkers()],
}


def _reads_next(view) -> bool:
    """Whether the view reads `next` (`….get("next")`), itself or through a function of its module."""
    module = ast.parse(inspect.getsource(inspect.getmodule(view)))
    functions = {node.name: node for node in ast.walk(module) if isinstance(node, ast.FunctionDef)}

    def reads(name: str, seen: set) -> bool:
        if name in seen or name not in functions:
            return False
        seen.add(name)
        for call in (node for node in ast.walk(functions[name]) if isinstance(node, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "get" and call.args and \
                    isinstance(call.args[0], ast.Constant) and call.args[0].value == "next":
                return True
            if isinstance(call.func, ast.Name) and reads(call.func.id, seen):
                return True
        return False
    return reads(view.__name__, set())


def _fuzz_next(app, estate: Estate, failures: list) -> None:
    """Every route that takes `next`, with each hostile value in its query string and in its form:
    never a 5xx, and a redirect only to a printable path of this site."""
    adapter = app.url_map.bind("localhost")
    for endpoint, posts in NEXT_ROUTES.items():
        path = adapter.build(endpoint)
        for who, fields in posts(estate):
            for value, place in itertools.product(HOSTILE_QUERY, ("query", "form")):
                client = who or app.test_client()
                signed_in = client not in (None, estate.anonymous) and who is not None
                token = csrf_from(client.get("/workbench" if signed_in else "/login").get_data(as_text=True))
                data = {**fields, "csrf_token": token, **({"next": value} if place == "form" else {})}
                encoded = quote_from_bytes(value.encode("utf-8", "surrogatepass"), safe="")
                response = client.post(f"{path}?next={encoded}" if place == "query" else path,
                                       data=_form_body(list(data.items())), headers={"Origin": "http://localhost"},
                                       content_type="application/x-www-form-urlencoded")
                _check(failures, response, "POST", endpoint, f"next in the {place}", value)
                location = response.headers.get("Location", "")
                if urlsplit(location).netloc or not location.isprintable():
                    failures.append(f"{response.status_code} POST {endpoint} next={_short(value)} → {_short(location)}")


# --- the tests -------------------------------------------------------------------------------

def test_every_post_route_is_fuzzed(app, estate):
    """Each console POST route is the target of a form on a page the walk fetches, and each JSON
    POST route has a body in the table."""
    adapter = app.url_map.bind("localhost")
    failures = []
    reached = {adapter.match(urlsplit(s.action).path, "POST")[0]
               for who, page, html in _walk_pages(app, estate, failures) for s in _submissions(who, page, html)}
    posts = url_rules(app, "POST")
    assert not failures, _report(failures)
    assert {r.endpoint for r in posts if not _is_json_api(r)} - reached == set()
    assert {r.endpoint for r in posts if _is_json_api(r)} == set(_json_bodies(estate))


def test_every_header_and_query_argument_a_view_reads_is_fuzzed():
    """The request.args and request.headers reads in the source are all in QUERY_ARGUMENTS,
    HEADERS_READ and PAGE_HEADERS (login and the tenant choice read `next` through their form
    class and `_safe_next`: NEXT_ROUTES)."""
    sources = [path.read_text() for layer in LAYERS for path in (PROJECT_ROOT / layer).glob("*.py")]
    arguments = {name for text in sources for name in re.findall(r'request\.args\.get\("([\w-]+)"', text)}
    headers = {name for text in sources for name in re.findall(r'request\.headers\.get\("([\w-]+)"', text)}
    assert arguments and arguments <= {name for names in QUERY_ARGUMENTS.values() for name in names}
    assert headers and headers <= {name for names in [*HEADERS_READ.values(), CONSOLE_HEADERS, PAGE_HEADERS]
                                   for name in names}


def test_every_route_that_takes_next_is_fuzzed(app):
    """Each view that reads `next`, itself or through a helper of its module, is in NEXT_ROUTES."""
    taking = {endpoint for endpoint, view in app.view_functions.items() if _reads_next(inspect.unwrap(view))}
    assert taking == set(NEXT_ROUTES)


def test_no_route_that_takes_next_answers_5xx_or_leaves_the_site(app, estate):
    """POST /login, /tenants/select and /locale with every hostile `next`, in the query and in the
    form, by everyone who can post them."""
    failures = []
    _fuzz_next(app, estate, failures)
    assert not failures, _report(failures)


def test_every_page_and_partial_is_never_stored(app, estate):
    """Every HTML answer of the walk (the administrator's pages, partials and panel forms, plainly
    and as HTMX) says `Cache-Control: no-store`: they carry customer data or one-time secrets."""
    stored = [(path, response.headers.get("Cache-Control"))
              for rule in url_rules(app, "GET") for path in [rule_path(rule, estate.values)]
              for headers in (None, HTMX) for response in [_get(estate, rule, path, headers=headers)]
              if response.mimetype == "text/html" and response.headers.get("Cache-Control") != "no-store"]
    assert stored == []


def test_no_form_or_page_answers_5xx_to_hostile_input(app, estate):
    """Every field of every form, every free-text path argument and query argument; then every
    page again, in case a stored value breaks one."""
    failures = []
    submissions = [s for who, page, html in _walk_pages(app, estate, failures) for s in _submissions(who, page, html)]
    _fuzz_forms(app, submissions, failures)
    _fuzz_gets(app, estate, failures)
    _walk_pages(app, estate, failures)
    assert not failures, _report(failures)


def test_no_json_endpoint_answers_5xx_to_hostile_input(app, estate):
    """Every value of every JSON body (and the headers the endpoint reads); then every page
    and JSON listing again, in case a stored value breaks one."""
    failures = []
    _fuzz_json(app, estate, failures)
    _walk_pages(app, estate, failures)
    assert not failures, _report(failures)
