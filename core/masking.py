"""Masking of common contact data in text sent to a model (intent classification, rule previews).

Masking is a risk reduction, not anonymization: unusual formats pass through.
"""
import re

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# Candidates only: a match becomes "[phone]" when it holds at least 7 digits.
_PHONE = re.compile(r"""
    (?<![0-9A-Za-z+]) \+ \d{1,3} (?: [ -]? (?: \(\d{1,4}\) | \d{1,4} ) ){1,6} (?!\d)  # +1 (415) 555-2671
  | (?<!\d) 1[3-9]\d (?: [ -]? \d{4} ){2} (?!\d)                                      # mobile, 138-0013-8000
  | (?<!\d) \(? 0\d{2,3} \)? [ -]? \d{3,4} [ -]? \d{4} (?!\d)                         # landline, (010) 12345678
  | (?<!\d) \(? \d{2,4} \)? (?: [ -] \d{3,4} ){2,3} (?!\d)                            # groups, 415-555-2671
  | \d{7,}                                                                            # 7+ digits in a row
""", re.VERBOSE)

def mask(text: str) -> str:
    """The text with e-mail addresses as "[email]" and common phone numbers as "[phone]"."""
    text = _EMAIL.sub("[email]", text)
    return _PHONE.sub(lambda m: "[phone]" if sum(c.isdigit() for c in m[0]) >= 7 else m[0], text)
