"""Masking of contact data in text sent to a model (intent classification, semantic routing in
previews, plans and message events): e-mail addresses, internationalised ones included, and the
phone numbers of the markets the desk serves (mainland China, Hong Kong, Taiwan, US/Canada, Europe)
as people write them. Numbers shaped like order numbers, amounts, dates and times stay.

Masking is a risk reduction, not anonymization: unusual formats pass through. What is covered,
and what is not: docs/decisions.md, "Masking"; docs/security.md.
"""
import re
import unicodedata

# An address may not begin inside another word, except right after Chinese, Japanese or Korean
# text, which people write against it without a space (`邮箱abc_1@qq.com谢谢`).
_AT_A_WORD_START = r"(?<![^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff])(?<![.%+-])"
# An address whose domain is ASCII (`li.lei+shop@example.com.cn`, punycode labels too), ending where
# that domain ends, so text written right after it stays.
_ASCII_EMAIL = re.compile(_AT_A_WORD_START + r"[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+(?:[A-Za-z]{2,}|xn--[A-Za-z0-9-]+)"
                          r"(?![A-Za-z0-9-])(?!\.[\w-])")
# An internationalised address (`bob@例子.中国`, `müller@example.com`, `用户@例子.中国`): any letters or
# digits. Written right against other words it takes them with it, which hides more, never less.
_WORLD_EMAIL = re.compile(r"[\w.%+-]+@(?:[\w-]+\.)+(?:xn--[A-Za-z0-9-]+|[^\W\d_]{2,})")


class _AsciiDigits(dict):
    """A `str.translate` table reading every Unicode decimal digit (full-width, Arabic-Indic …) as
    its ASCII digit and leaving every other character, one for one, so phone shapes are matched
    on ASCII digits at the positions of the original text; filled as characters are seen."""

    def __missing__(self, char: int) -> int:
        digit = unicodedata.decimal(chr(char), None)
        self[char] = char if digit is None else ord("0") + digit
        return self[char]


_TO_ASCII = _AsciiDigits()
_SEP = r"[ .\-\u00a0\u2010-\u2014\u3000\uff0d]"  # space, dot, hyphen and their wide or unbreakable kin
_PHONE = re.compile(rf"""
    (?<![0-9A-Za-z+])(?<![0-9A-Za-z][.\-/])        # not the tail of a word, a longer number or a reference
    (?:
        (?:\+|00)86{_SEP}?(?:1[3-9][0-9]{_SEP}?[0-9]{{4}}{_SEP}?[0-9]{{4}}           # +86 138 0013 8000, 0086-…
                         |[1-9][0-9]{{1,2}}{_SEP}?[0-9]{{3,4}}{_SEP}?[0-9]{{4}})       # +86 10 1234 5678
      | (?:\+|00)1{_SEP}?(?:\([2-9][0-9]{{2}}\)|[2-9][0-9]{{2}}){_SEP}?[0-9]{{3}}{_SEP}?[0-9]{{4}}  # +1 (415) 555-2671
      | (?:\+|00)852{_SEP}?[0-9]{{4}}{_SEP}?[0-9]{{4}}                            # +852 9123 4567
      | (?:\+|00)886{_SEP}?(?:9[0-9]{{2}}{_SEP}?[0-9]{{3}}{_SEP}?[0-9]{{3}}         # +886 912 345 678
                          |[2-8]{_SEP}?[0-9]{{3,4}}{_SEP}?[0-9]{{4}})             # +886 2 2345 6789
      | (?:\+|00)[ ]?[1-9][0-9]{{0,2}}(?:{_SEP}?(?:\([0-9]{{1,4}}\)|[0-9]{{1,4}})){{2,6}}  # +44 (0)20 …, +33 1 23 …
      | (?:\(0[0-9]{{1,3}}\)|0[0-9]{{1,3}}){_SEP}?[0-9]{{3,4}}{_SEP}?[0-9]{{4}}  # (010) 1234 5678, 02-2345-6789
      | 0[0-9](?:{_SEP}[0-9]{{2}}){{4}}                                # 01 23 45 67 89, 01.23.45.67.89
      | 0[0-9]{{1,4}}(?:{_SEP}[0-9]{{2,4}}){{2,3}}                     # 020 7946 0958, 030 1234 5678
      | 0[0-9]{{3,4}}{_SEP}[0-9]{{6}}                                  # 07700 900123
      | 0[1-9][0-9]{{8,10}}                                           # 01012345678, a national number written plain
      | 1[3-9][0-9]{_SEP}?[0-9]{{4}}{_SEP}?[0-9]{{4}}                  # 13800138000, 138 0013 8000, 138.0013.8000
      | (?:1{_SEP})?(?:\([2-9][0-9]{{2}}\)|[2-9][0-9]{{2}}){_SEP}?[0-9]{{3}}{_SEP}[0-9]{{4}}  # (415) 555-2671, 1-800-…
      | [2-9][0-9]{{2}}[2-9][0-9]{{6}}                                # 4155552671
      | [235679][0-9]{{3}}{_SEP}[0-9]{{4}}                              # 9123 4567, 2345-6789 (Hong Kong)
      | 09[0-9]{{2}}{_SEP}?[0-9]{{3}}{_SEP}?[0-9]{{3}}                  # 0912-345-678 (Taiwan)
    )
    (?![0-9A-Za-z])                                 # nor the head of one
""", re.VERBOSE)


def _is_phone(candidate: str) -> bool:
    """Whether a candidate holds as many digits as a phone number of its kind: 8 to 15 with a
    country code (E.164), 9 to 12 with a trunk 0 or a bracketed area code (`05.11.2026` is a date)."""
    digits = sum(char.isdigit() for char in candidate)
    if candidate.startswith(("+", "00")):
        return 8 <= digits <= 15
    if candidate.startswith(("0", "(")):
        return 9 <= digits <= 12
    return True


def mask(text: str) -> str:
    """The text with e-mail addresses as "[email]" and phone numbers as "[phone]"."""
    text = _WORLD_EMAIL.sub("[email]", _ASCII_EMAIL.sub("[email]", text))
    kept, end = [], 0
    for found in _PHONE.finditer(text.translate(_TO_ASCII)):
        if _is_phone(found[0]):
            kept += [text[end:found.start()], "[phone]"]
            end = found.end()
    return "".join(kept) + text[end:]
