"""A member's shifts and leave as people type them on the availability page (issue 35), and back.

One shift per line: the weekdays (1 Monday to 7 Sunday; a list `1,3,5`, a run `1-5`, or both
`1-3,6`), a space, then the start and the end: `1-5 09:00-18:00`, `6,7 22:00-06:00`. One leave
range per line: its first and last day, `2026-10-01 2026-10-07`, or one day, `2026-10-20`. Blank
lines are skipped. Reading gives the shapes `desk.availability.validate_schedule` takes, with the
line each item came from, and checks only how a line is laid out: whether a weekday, a time or a
date is allowed is the validator's to say, at its own path.
"""
import re

LINE_LIMIT = 100  # characters of one line; none that is laid out right is longer
SHIFT_RE = re.compile(r"(?P<days>[^:]+?)\s+(?P<start>[0-9]{1,2}:[0-9]{2})\s*[-–~～]\s*(?P<end>[0-9]{1,2}:[0-9]{2})")
DAYS_RE = re.compile(r"(?P<first>[0-9]{1,2})(?:\s*[-–~～]\s*(?P<last>[0-9]{1,2}))?")
DAY_SEPARATORS = re.compile(r"\s*[,，、]\s*")
DATE = r"[0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}"
LEAVE_RE = re.compile(rf"(?P<first>{DATE})(?:\s*(?:-|~|～|–|—|至|to|\s)\s*(?P<last>{DATE}))?")


class UnreadableLine(ValueError):
    """A line not laid out as the format says; `line` is its number in the text, from 1."""

    def __init__(self, line: int):
        super().__init__(f"line {line}")
        self.line = line


def _lines(text: str) -> list[tuple[int, str]]:
    """(number, stripped text) of each non-blank line; a line longer than any laid out right is
    unreadable (so no pattern ever runs over a long one)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if len(line) > LINE_LIMIT:
            raise UnreadableLine(number)
        if line:
            found.append((number, line))
    return found


def _weekdays(text: str, line: int) -> list[int]:
    """The weekdays of `1,3,5`, `1-5` or `1-3,6` in the order written; a run whose last day comes
    before its first is unreadable."""
    weekdays = []
    for item in DAY_SEPARATORS.split(text):
        match = DAYS_RE.fullmatch(item)
        if match is None:
            raise UnreadableLine(line)
        first = int(match["first"])
        last = int(match["last"]) if match["last"] else first
        if last < first:
            raise UnreadableLine(line)
        weekdays.extend(range(first, last + 1))
    return weekdays


def _time(text: str) -> str:
    """`9:00` written as `09:00`."""
    return text.zfill(5)


def read_shifts(text: str) -> tuple[list[dict], list[int]]:
    """The shifts of the text (`{weekdays, start, end}`, one per non-blank line) and the line each
    came from; UnreadableLine names the first line laid out otherwise."""
    shifts, lines = [], []
    for number, line in _lines(text):
        match = SHIFT_RE.fullmatch(line)
        if match is None:
            raise UnreadableLine(number)
        shifts.append({"weekdays": _weekdays(match["days"], number), "start": _time(match["start"]),
                       "end": _time(match["end"])})
        lines.append(number)
    return shifts, lines


def _date(text: str) -> str:
    """`2026/10/1` or `2026.10.1` written `2026-10-01`."""
    year, month, day = re.split(r"[-/.]", text)
    return f"{year}-{month.zfill(2)}-{day.zfill(2)}"


def read_leave(text: str) -> tuple[list[dict], list[int]]:
    """The leave ranges of the text (`{from, to}`, one per non-blank line; one day alone is both)
    and the line each came from; UnreadableLine names the first line laid out otherwise."""
    ranges, lines = [], []
    for number, line in _lines(text):
        match = LEAVE_RE.fullmatch(line)
        if match is None:
            raise UnreadableLine(number)
        first = _date(match["first"])
        ranges.append({"from": first, "to": _date(match["last"]) if match["last"] else first})
        lines.append(number)
    return ranges, lines


def weekday_runs(weekdays: list[int]) -> list[tuple[int, int]]:
    """Weekdays in the order saved as (first, last) runs: three or more days in a row are one run,
    any other day a run of its own (`[1, 2, 3, 4, 5, 7]` is `[(1, 5), (7, 7)]`)."""
    runs: list[list[int]] = []
    for day in weekdays:
        if runs and day == runs[-1][-1] + 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return [pair for run in runs for pair in ([(run[0], run[-1])] if len(run) >= 3 else [(day, day) for day in run])]


def _days_text(weekdays: list[int]) -> str:
    """Weekdays as written back: `1-5`, `6,7`, `1-3,5`."""
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in weekday_runs(weekdays))


def shifts_text(shifts: list[dict]) -> str:
    """Saved shifts as the page shows them for editing, one per line."""
    return "\n".join(f"{_days_text(shift['weekdays'])} {shift['start']}-{shift['end']}" for shift in shifts)


def leave_text(leave: list[dict]) -> str:
    """Saved leave ranges as the page shows them for editing, one per line (one day alone once)."""
    return "\n".join(entry["from"] if entry["from"] == entry["to"] else f"{entry['from']} {entry['to']}"
                     for entry in leave)
