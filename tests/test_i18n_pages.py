"""Every console and workbench page renders in both languages with `<html lang>` set, and the
Simplified Chinese page has no English sentence left (checked on the rendered text, data aside):
the URL map is walked with the hostile-input walk's estate, as the administrator."""
import re
from html.parser import HTMLParser

import pytest
from babel.messages.pofile import read_po

from tests.support.estate import rule_path, url_rules
from tests.support.i18n import CATALOG

# Elements whose text is an identifier, a sample or a program, or says it is English on purpose.
CODE_ELEMENTS = {"code", "kbd", "samp", "pre", "script", "style", "textarea", "option", "title"}
# Three English words in a row (what the estate stores is data: see DATA).
ENGLISH = re.compile(r"[A-Za-z][a-z']+(?:[ ,]+[A-Za-z][a-z']*){2,}")
# What the estate (tests/support/estate.py and the fixtures it uses) stores: names, labels and
# messages people typed. Shown as they are in every language.
DATA = ("Custom Studio", "Big orders are high priority", "Weekday rotation", "Hello from the walk",
        "Refund desk", "Send to CRM", "Your parcel left today", "Fill in the request", "Due date",
        "Service request")  # the sample application's name: a comparison of its versions quotes it


def catalog_phrases() -> list[str]:
    """The catalog's English texts of two words or more without placeholders: one of them on a
    Chinese page is text marked for translation but shown untranslated."""
    with CATALOG.open("rb") as source:
        ids = [m.id if isinstance(m.id, str) else m.id[0] for m in read_po(source) if m.id]
    return [text for text in ids if "%" not in text and re.search(r"[A-Za-z]+ [A-Za-z]+", text)]


class VisibleText(HTMLParser):
    """The text a person reads on the page, outside code and English-marked elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.skipping = [], []

    def handle_starttag(self, tag, attrs):
        if tag in CODE_ELEMENTS or dict(attrs).get("lang") == "en":
            self.skipping.append(tag)
        elif not self.skipping:
            self.text += [value for name, value in attrs if name in ("aria-label", "title", "placeholder") and value]

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping:
            self.text.append(data)


def english_sentences(html: str, phrases: list[str] = ()) -> list[str]:
    """English runs of three words or more on the page and the catalog's English phrases, data
    aside."""
    parser = VisibleText()
    parser.feed(html)
    found = []
    for text in parser.text:
        for word in DATA:
            text = text.replace(word, " ")
        found += ENGLISH.findall(text) + [phrase for phrase in phrases if phrase in text]
    return found


def test_every_page_renders_in_both_languages_and_the_chinese_one_has_no_english_left(app, estate):
    left, seen, phrases = {}, 0, catalog_phrases()
    for rule in url_rules(app, "GET"):
        path = rule_path(rule, estate.values)
        if path.startswith(("/api/", "/static/", "/i18n/")):
            continue
        english = estate.admin.get(path, headers={"Accept-Language": "en"})
        chinese = estate.admin.get(path, headers={"Accept-Language": "zh-CN"})
        assert english.status_code == chinese.status_code, path
        if chinese.status_code != 200 or not chinese.mimetype == "text/html":
            continue
        page = chinese.get_data(as_text=True)
        if page.lstrip().lower().startswith("<!doctype html>"):
            seen += 1
            assert '<html lang="zh-CN">' in page and '<html lang="en">' in english.get_data(as_text=True), path
        if found := english_sentences(page, phrases):
            left[path] = found
    assert seen >= 25
    assert left == {}, "\n".join(f"{path}: {found}" for path, found in left.items())


@pytest.mark.parametrize("html, found", [
    ("<p>Saved as a draft.</p>", ["Saved as a draft"]),
    ("<p>已保存为草稿。<code>rule_not_found</code></p>", []),
    ('<button lang="en">English</button><p>切换 Big orders are high priority</p>', []),
    ('<a aria-label="Open the conversation">打开</a>', ["Open the conversation"]),
    ("<p>v2 · JSON</p>", []),
    ("<p>保存 Log out</p>", ["Log out"]),  # two words, but the catalog's own text
])
def test_the_check_finds_english_sentences_and_only_those(html, found):
    assert english_sentences(html, ["Log out", "Save draft"]) == found
