"""core.masking: phone numbers of the markets the desk serves and e-mail addresses become
placeholders before text reaches a model; order numbers, amounts, dates and times that look
alike stay. Masking reduces risk; it is not anonymization (docs/decisions.md, "Masking")."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.masking import mask

SEPARATORS = [" ", "-", ".", "\u00a0", "\u3000", "\uff0d"]


def digits(count: int, first: str = "0123456789"):
    """`count` ASCII digits, the first one of `first`."""
    return st.tuples(st.sampled_from(first), st.text("0123456789", min_size=count - 1, max_size=count - 1)) \
        .map("".join)


@st.composite
def cn_mobile(draw) -> str:
    number = "1" + draw(st.sampled_from("3456789")) + draw(digits(9))
    sep = draw(st.sampled_from(["", *SEPARATORS]))
    local = sep.join((number[:3], number[3:7], number[7:]))
    prefix = draw(st.sampled_from(["", "+86", "+86 ", "0086", "0086-", "+86-"]))
    return prefix + local


@st.composite
def cn_landline(draw) -> str:
    area, number = "0" + draw(digits(draw(st.sampled_from([2, 3])), "123456789")), draw(digits(8, "23456789"))
    shape = draw(st.sampled_from(["{a}-{n}", "({a}) {n4} {n8}", "{a} {n4} {n8}", "{a}{n}", "({a}){n}"]))
    return shape.format(a=area, n=number, n4=number[:4], n8=number[4:])


@st.composite
def nanp(draw) -> str:
    area, exchange, line = draw(digits(3, "23456789")), draw(digits(3, "23456789")), draw(digits(4))
    sep = draw(st.sampled_from(SEPARATORS))
    shape = draw(st.sampled_from(["({a}) {e}-{l}", "({a}){e}-{l}", "{a}{s}{e}{s}{l}", "+1 {a} {e} {l}",
                                  "1-{a}-{e}-{l}", "+1 ({a}) {e}-{l}", "{a}{e}{l}"]))
    return shape.format(a=area, e=exchange, l=line, s=sep)


@st.composite
def hong_kong_or_taiwan(draw) -> str:
    eight = draw(digits(8, "235679"))
    mobile = "09" + draw(digits(8))
    landline = draw(digits(8, "23456789"))
    sep = draw(st.sampled_from([" ", "-"]))
    return draw(st.sampled_from([
        f"{eight[:4]}{sep}{eight[4:]}", f"+852 {eight[:4]} {eight[4:]}", f"+852{eight}",
        f"{mobile[:4]}{sep}{mobile[4:7]}{sep}{mobile[7:]}", f"+886 {mobile[1:4]} {mobile[4:7]} {mobile[7:]}",
        f"(02) {landline[:4]}-{landline[4:]}", f"02-{landline[:4]}-{landline[4:]}"]))


@st.composite
def european(draw) -> str:
    pairs = [draw(digits(2)) for _ in range(4)]
    sep = draw(st.sampled_from([" ", "."]))
    french = "0" + draw(st.sampled_from("12345679"))
    london, berlin = draw(digits(8)), draw(digits(8, "123456789"))
    return draw(st.sampled_from([
        sep.join([french, *pairs]), "+33 " + " ".join([french[1], *pairs]), f"0033 {french[1]} {' '.join(pairs)}",
        f"020 {london[:4]} {london[4:]}", f"+44 20 {london[:4]} {london[4:]}", f"+44 (0)20 {london[:4]} {london[4:]}",
        f"030 {berlin}", f"+49 30 {berlin}", f"0049-30-{berlin}", f"07700 {london[:6]}"]))


BEFORE = st.sampled_from(["", "call ", "电话", "号码：", "Tel: ", "(", "请打 "])
AFTER = st.sampled_from(["", " now", "谢谢", ", thanks", ")", "。"])


@settings(max_examples=400, deadline=None)
@given(st.one_of(cn_mobile(), cn_landline(), nanp(), hong_kong_or_taiwan(), european()), BEFORE, AFTER)
def test_every_common_phone_format_is_masked_whole(number, before, after):
    assert mask(f"{before}{number}{after}") == f"{before}[phone]{after}"


@settings(max_examples=200, deadline=None)
@given(st.one_of(cn_mobile(), cn_landline(), nanp(), hong_kong_or_taiwan()), BEFORE)
def test_a_number_of_a_fixed_length_plan_ends_where_its_plan_does(number, before):
    """Chinese, North American, Hong Kong and Taiwanese numbers have fixed lengths, so a number
    written a space after one stays (a European one with its country code may take it along)."""
    assert mask(f"{before}{number} 3点后") == f"{before}[phone] 3点后"


LOCAL = st.text("abcdefghijklmnopqrstuvwxyz0123456789._+-", min_size=1, max_size=12) \
    .filter(lambda local: local[0].isalnum())
WORLD_LOCAL = st.sampled_from(["用户", "李雷", "josé", "müller"])
LABEL = st.sampled_from(["example", "mail-1", "例子", "公司", "xn--fsq", "bücher"])
TLD = st.sampled_from(["com", "cn", "co.uk", "中国", "公司", "xn--fiqs8s", "online"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(LOCAL, WORLD_LOCAL), st.lists(LABEL, min_size=1, max_size=3), TLD)
def test_every_e_mail_address_is_masked_internationalised_ones_too(local, labels, tld):
    address = f"{local}@{'.'.join(labels)}.{tld}"
    assert mask(f"mail {address} please") == "mail [email] please"


@pytest.mark.parametrize("text,masked", [
    ("13800138000", "[phone]"),
    ("电话13912345678谢谢", "电话[phone]谢谢"),
    ("138 0013 8000", "[phone]"),
    ("138-0013-8000", "[phone]"),
    ("138.0013.8000", "[phone]"),
    ("+8613800138000", "[phone]"),
    ("+86 138 0013 8000", "[phone]"),
    ("+86-138-0013-8000", "[phone]"),
    ("电话+86 13800138000", "电话[phone]"),
    ("0086-138-0013-8000", "[phone]"),  # was "[phone]-8000"
    ("(010) 1234 5678", "[phone]"),
    ("010-12345678", "[phone]"),
    ("0755 8888 9999", "[phone]"),
    ("+1 (415) 555-2671", "[phone]"),
    ("call 415-555-2671 today", "call [phone] today"),
    ("415.555.2671", "[phone]"),
    ("(415)555-2671", "[phone]"),
    ("01 23 45 67 89", "[phone]"),
    ("+44 20 7946 0958", "[phone]"),
    ("+44 (0)20 7946 0958", "[phone]"),
    ("１３８００１３８０００", "[phone]"),  # full-width digits
    ("user@example.com", "[email]"),
    ("bob@例子.中国", "[email]"),
    ("Li.Lei+orders@mail.example.co.uk.", "[email]."),
    ("邮箱abc_1@qq.com谢谢", "邮箱[email]谢谢"),
    ("13800138000@qq.com", "[email]"),
])
def test_the_reported_and_the_common_formats_are_masked(text, masked):
    assert mask(text) == masked


@pytest.mark.parametrize("text", [
    # order and reference numbers
    "ref 1234567", "order 123456", "order 20261125001", "JD 265843177926", "订单号 3456789012345678901",
    "#20261125-0001", "A-2345-6789", "No.2345 6789", "SF1234567890123", "room 101, +5 points",
    # amounts
    "price 12.50, 3 items", "1,234,567 yuan", "$4,155,552.67", "1.234.567,89 €", "12 345 678,90", "¥13,800.00",
    # dates and times
    "2026-03-02 10:30", "2026-11-25", "25.11.2026", "05.11.2026", "2026/11/25", "11/25/2026", "20261125",
    "2026年11月25日", "14:30:59", "2026-11-25T14:30:00Z", "09:00-18:00", "0900-1800",
    # the rest
    "version 1.2.3", "say hi @ the desk", "²³⁴⁵⁶⁷⁸⁹¹",
])
def test_look_alikes_stay(text):
    assert mask(text) == text


@st.composite
def look_alike(draw) -> str:
    year, month, day = draw(st.integers(2000, 2199)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
    hour, minute = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    amount = draw(st.integers(1000, 10**12))
    return draw(st.sampled_from([
        f"{year}-{month:02}-{day:02}", f"{day:02}.{month:02}.{year}", f"{year}/{month}/{day}", f"{month}/{day}/{year}",
        f"{year}{month:02}{day:02}", f"{year}年{month}月{day}日", f"{hour:02}:{minute:02}",
        f"{year}-{month:02}-{day:02} {hour:02}:{minute:02}:00", f"¥{amount:,}.00", f"${amount:,}", f"{amount:,} 元",
        f"order {draw(digits(draw(st.integers(13, 20)), '123456789'))}",
        f"ORD-{draw(digits(draw(st.integers(6, 16))))}", f"#{draw(digits(draw(st.integers(3, 6))))}"]))


@settings(max_examples=400, deadline=None)
@given(look_alike())
def test_dates_times_amounts_and_order_numbers_that_look_alike_stay(text):
    assert mask(text) == text
