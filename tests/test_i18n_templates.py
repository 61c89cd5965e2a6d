"""Every piece of visible text in the templates goes through the catalogs: a template's own text
outside `_()`/`gettext`/`ngettext` fails here, unless it is a brand name, code or symbol."""
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from jinja2 import Environment

from core.config import PROJECT_ROOT

TEMPLATES = PROJECT_ROOT / "templates"
# Names that read the same in every language (brands, formats, protocols, units).
ALLOWED = ("Custom Studio", "Studio", "JSON", "HTTPS", "HTTP", "HMAC", "SHA-256", "URL", "API", "ID",
           "JavaScript", "SVG", "CSV", "UTC", "v", "KiB", "ms", "s", "GET", "POST", "Bearer", "HTMX")
# Attributes people read (or hear, through a screen reader).
READ_ATTRIBUTES = {"title", "alt", "placeholder", "aria-label", "aria-description", "aria-roledescription",
                   "aria-valuetext", "label"}
# Elements whose content is an identifier, a sample or a program, not a sentence.
CODE_ELEMENTS = {"code", "kbd", "samp", "pre", "script", "style"}
EXPRESSION = "\x00"  # where a {{ … }} was: its text comes from the catalog or from data
LETTERS = re.compile(r"[A-Za-z\u4e00-\u9fff]")
ALLOWED_WORDS = re.compile("|".join(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])"
                                    for word in sorted(ALLOWED, key=len, reverse=True)))


def literal_html(source: str) -> str:
    """The template's own HTML: each {{ … }} becomes one marker, tags and comments vanish."""
    parts, skipping = [], None
    for _, kind, value in Environment().lex(source):
        if skipping:
            skipping = None if kind == skipping else skipping
        elif kind == "data":
            parts.append(value)
        elif kind == "variable_begin":
            parts.append(EXPRESSION)
            skipping = "variable_end"
        elif kind in ("block_begin", "comment_begin"):
            skipping = kind.replace("begin", "end")
    return "".join(parts)


def unmarked(text: str) -> str | None:
    """The text, when letters remain after removing markers and allowed names; else None."""
    rest = ALLOWED_WORDS.sub("", text.replace(EXPRESSION, " ")).strip()
    return rest if LETTERS.search(rest) else None


class LiteralText(HTMLParser):
    """Collects the visible literal text and read attributes of one template."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self.code_depth = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in CODE_ELEMENTS:
            self.code_depth += 1
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value and unmarked(value):
                self.found.append(f'{tag} {name}="{value}"')
        value = dict(attrs).get("value") or ""
        if tag == "input" and dict(attrs).get("type") in ("submit", "button") and unmarked(value):
            self.found.append(f'input value="{value}"')

    def handle_endtag(self, tag):
        if tag in CODE_ELEMENTS and self.code_depth:
            self.code_depth -= 1

    def handle_data(self, data):
        if not self.code_depth and unmarked(data):
            self.found.append(unmarked(data))


def template_literals(path: Path) -> list[str]:
    """What `path` shows that no catalog translates."""
    parser = LiteralText()
    parser.feed(literal_html(path.read_text(encoding="utf-8")))
    parser.close()
    return parser.found


@pytest.mark.parametrize("path", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_templates_show_no_unmarked_text(path):
    assert template_literals(path) == []


@pytest.mark.parametrize("source, found", [
    ("<p>Saved.</p>", ["Saved."]),
    ('<button aria-label="Close">×</button>', ['button aria-label="Close"']),
    ("<p>{{ _('Saved.') }}</p>", []),
    ("<p>{{ count }} · {{ _('rules') }}</p>", []),
    ("<p>{% if x %}Draft{% endif %}</p>", ["Draft"]),
    ("<p>{# a note #}<code>rule_not_found</code> Custom Studio</p>", []),
    ('<input type="submit" value="Send">', ['input value="Send"']),
    ("<p>{% trans %}Hello{% endtrans %}</p>", ["Hello"]),  # use _() instead
])
def test_the_scan_finds_literal_text_and_only_that(tmp_path, source, found):
    page = tmp_path / "page.html"
    page.write_text(source, encoding="utf-8")
    assert template_literals(page) == found
