"""The composer in a real browser, with real key and input-method events (Chromium's DevTools
protocol: Input.imeSetComposition / insertText / dispatchKeyEvent, what an IME produces)."""
import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from core.db import db
from desk.models import Message
from desk.quick_replies import add_reply
from tests.conftest import customer_conversation
from tests.support.browser import log_in

ENTER = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
CTRL, META = 2, 4  # CDP modifier bits


def sent() -> list[str]:
    db.session.expire_all()
    return list(db.session.scalars(select(Message.text).where(Message.direction == "outbound")))


@pytest.fixture
def composer(page, live_server, tenant, agent):
    """The agent's workbench with a conversation open; the Reply box focused."""
    customer_conversation(tenant, "Where is my parcel?", name="Olga Customer")
    log_in(page, live_server, agent.user.email)
    page.get_by_role("link", name="Olga Customer").click()
    box = page.get_by_role("textbox", name="Reply")
    box.focus()
    return box


@pytest.fixture
def cdp(page):
    return page.context.new_cdp_session(page)


def press_enter(cdp, modifiers: int = 0, key_code: int = 13) -> None:
    """An Enter keydown/keyup pair as an input method hands it to the page: a raw key event,
    without the character a plain Enter would type (the input method consumes it)."""
    cdp.send("Input.dispatchKeyEvent", {**ENTER, "type": "rawKeyDown", "modifiers": modifiers,
                                        "windowsVirtualKeyCode": key_code})
    cdp.send("Input.dispatchKeyEvent", {**ENTER, "type": "keyUp", "modifiers": modifiers,
                                        "windowsVirtualKeyCode": key_code})


def compose(cdp, text: str) -> None:
    """An input method showing `text` as an uncommitted composition (compositionstart/update)."""
    cdp.send("Input.imeSetComposition", {"text": text, "selectionStart": len(text), "selectionEnd": len(text)})


def commit(cdp, text: str) -> None:
    """The input method commits its candidate (compositionend)."""
    cdp.send("Input.insertText", {"text": text})


def test_enter_sends_and_empties_the_composer(page, composer):
    composer.type("Your parcel is on its way")
    page.keyboard.press("Enter")
    expect(page.get_by_role("list", name="Messages and changes")).to_contain_text("Your parcel is on its way")
    expect(composer).to_have_value("")
    assert sent() == ["Your parcel is on its way"]


@pytest.mark.parametrize("chord", ["Shift+Enter", "Control+Enter", "Meta+Enter"])
def test_shift_ctrl_and_command_enter_insert_a_newline_and_never_send(page, composer, chord):
    composer.type("first line")
    page.keyboard.press(chord)
    composer.type("second line")
    expect(composer).to_have_value("first line\nsecond line")
    page.wait_for_timeout(300)
    assert sent() == []


def test_enter_while_composing_chooses_the_candidate_and_never_sends(page, composer, cdp):
    compose(cdp, "ni")
    press_enter(cdp)  # the IME's Enter: isComposing is true
    commit(cdp, "你")
    expect(composer).to_have_value("你")
    page.wait_for_timeout(300)
    assert sent() == []


def test_a_keycode_229_enter_just_after_compositionend_never_sends(page, composer, cdp):
    compose(cdp, "hao")
    commit(cdp, "好")  # compositionend first, then Safari's / macOS Chinese input's Enter
    press_enter(cdp, key_code=229)
    expect(composer).to_have_value("好")
    page.wait_for_timeout(300)
    assert sent() == []


@pytest.mark.parametrize("modifier", [CTRL, META])
def test_ctrl_or_command_enter_mid_composition_keeps_the_text_without_doubling_it(page, composer, cdp, modifier):
    composer.type("订单")
    compose(cdp, "号")
    press_enter(cdp, modifiers=modifier)
    commit(cdp, "号")
    expect(composer).to_have_value("订单号")
    page.wait_for_timeout(300)
    assert sent() == []


def test_repeated_enter_sends_once(page, composer):
    posts = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    composer.type("Only once, please")
    for _ in range(6):
        page.keyboard.press("Enter")
    expect(composer).to_have_value("")
    page.wait_for_timeout(500)
    assert sent() == ["Only once, please"] and len(posts) == 1


def test_the_private_note_toggle_stores_a_note(page, composer):
    page.get_by_role("checkbox", name="Private note").check()
    composer.type("Customer asked twice already")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("list", name="Messages and changes")).to_contain_text("Private note")
    db.session.expire_all()
    assert db.session.scalar(select(Message.kind).where(Message.direction == "outbound")) == "private_note"


def test_slash_opens_the_quick_replies_and_enter_selects_one_without_sending(page, live_server, tenant, agent,
                                                                             composer):
    add_reply(tenant.id, "Greeting", "Hello, thank you for contacting us.")
    add_reply(tenant.id, "Closing", "Have a great day!")
    db.session.commit()
    page.goto(f"{live_server}/workbench")  # the list alone, as before the replies were added
    page.get_by_role("link", name="Olga Customer").click()
    box = page.get_by_role("textbox", name="Reply")
    box.focus()
    page.keyboard.type("/")
    picker = page.get_by_role("listbox", name="Quick replies")
    expect(picker.get_by_role("option")).to_have_count(2)
    page.keyboard.type("greet")
    expect(picker.get_by_role("option")).to_have_count(1)
    page.keyboard.press("Enter")
    expect(box).to_have_value("Hello, thank you for contacting us.")
    expect(picker).to_be_hidden()
    page.keyboard.type(" /")
    page.keyboard.press("ArrowDown")
    expect(picker.get_by_role("option", name="Greeting")).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Escape")
    expect(picker).to_be_hidden()
    page.wait_for_timeout(300)
    assert db.session.scalar(select(func.count()).select_from(Message).where(Message.direction == "outbound")) == 0


def pick_greeting(page, live_server, agent, conversation):
    """The agent's composer of the conversation with the quick reply "Greeting" picked; the Reply box."""
    log_in(page, live_server, agent.user.email)
    page.goto(f"{live_server}/workbench/conversations/{conversation.id}")
    box = page.get_by_role("textbox", name="Reply")
    box.focus()
    page.keyboard.type("/greet")
    page.keyboard.press("Enter")
    return box


def test_a_quick_reply_fills_its_placeholders_as_text_and_never_markup(page, live_server, tenant, agent):
    agent.display_name = "李雷"
    conversation = customer_conversation(tenant, "Hello", name='<img src=x onerror="document.title=1"> Zhang')
    add_reply(tenant.id, "Greeting", 'Hi {{customer.first_name}}, {{ agent.name }} here (#{{conversation.id}}) '
                                     'for {{customer.name | "you"}}.')
    db.session.commit()
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    box = pick_greeting(page, live_server, agent, conversation)
    expect(box).to_have_value(f'Hi <img, 李雷 here (#{conversation.id}) for <img src=x onerror="document.title=1"> '
                              'Zhang.')
    assert page.title() != "1"


def test_a_value_the_conversation_lacks_stays_selected_and_blocks_the_send(page, live_server, tenant, agent):
    conversation = customer_conversation(tenant, "Hello", name="")
    add_reply(tenant.id, "Greeting", "Dear {{customer.name}}, thank you.")
    add_reply(tenant.id, "Welcome", 'Hi {{customer.first_name | "there"}}!')
    db.session.commit()
    box = pick_greeting(page, live_server, agent, conversation)
    expect(box).to_have_value("Dear {{customer.name}}, thank you.")
    assert box.evaluate("field => field.value.slice(field.selectionStart, field.selectionEnd)") == "{{customer.name}}"
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert").filter(has_text="Fill in {{customer.name}} before sending")).to_be_visible()
    assert sent() == []
    page.keyboard.type("Ms Wang")  # typed over the selected placeholder
    page.keyboard.press("Enter")
    expect(box).to_have_value("")
    assert sent() == ["Dear Ms Wang, thank you."]
    page.keyboard.type("/welc")
    page.keyboard.press("Enter")
    expect(box).to_have_value("Hi there!")  # the fallback stands in for the missing value
