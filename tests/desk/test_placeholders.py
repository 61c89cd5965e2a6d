"""Placeholders of quick replies (issue 37): the four known names, each with an optional quoted
fallback, found in order where they stand (property-based); anything else between braces refused
when a reply is saved, with a message listing every known name; a first name is the part of the name
before its first space, or the whole name."""
import pytest
from hypothesis import given, strategies as st

from core.api import ApiError
from desk.placeholders import NAMES, UnknownPlaceholder, first_name, placeholders
from desk.quick_replies import add_reply
from tests.conftest import csrf_from

PLAIN = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=20)
FALLBACK = st.none() | st.text(st.characters(blacklist_characters='"{}', blacklist_categories=("Cs",)), max_size=10)
SPACE = st.sampled_from(["", " ", "  "])


@given(st.lists(st.tuples(PLAIN, st.sampled_from(NAMES), FALLBACK, SPACE, SPACE), max_size=5), PLAIN)
def test_every_known_placeholder_is_found_in_order_where_it_stands(parts, tail):
    text, expected = "", []
    for plain, name, fallback, before, after in parts:
        text += plain
        written = "{{" + before + name + after + ("" if fallback is None else f'|{before}"{fallback}"{after}') + "}}"
        expected.append((name, fallback, len(text), len(text) + len(written)))
        text += written
    text += tail
    assert [(p.name, p.fallback, p.start, p.end) for p in placeholders(text)] == expected


@given(st.text(st.characters(blacklist_categories=("Cs",))).filter(lambda text: "{{" not in text))
def test_text_without_double_braces_has_no_placeholder(text):
    assert placeholders(text) == []


@pytest.mark.parametrize("text", ["Hi {{customer.phone}}", "{{}}", "{{ customer.name | 您好 }}",
                                  '{{customer.name | "a" | "b"}}', "{{Customer.Name}}", "{{agent.name}} {{order.id}}",
                                  "{{customer.name\n}}x{{ conversation }}"])
def test_anything_else_between_braces_is_unknown(text):
    with pytest.raises(UnknownPlaceholder):
        placeholders(text)


@pytest.mark.parametrize(("name", "first"), [("Wang Fang", "Wang"), ("王芳", "王芳"), (" Li  Lei ", "Li"),
                                             ("Zhang", "Zhang")])
def test_the_first_name_is_the_part_before_the_first_space_or_the_whole_name(name, first):
    assert first_name(name) == first


def test_saving_a_reply_with_an_unknown_placeholder_is_refused(tenant):
    with pytest.raises(ApiError) as refused:
        add_reply(tenant.id, "Greeting", "Hi {{customer.nickname}}")
    assert (refused.value.code, refused.value.detail) == ("invalid_quick_reply", "placeholder")
    assert add_reply(tenant.id, "Greeting", 'Hi {{customer.first_name | "there"}}').body.startswith("Hi {{")


def test_the_page_lists_every_known_name(admin_client):
    page = admin_client.get("/quick-replies").get_data(as_text=True)
    response = admin_client.post("/quick-replies", data={"csrf_token": csrf_from(page), "title": "Greeting",
                                                         "body": "Dear {{customer.title}}"})
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    for name in NAMES:
        assert "{{" + name + "}}" in html
