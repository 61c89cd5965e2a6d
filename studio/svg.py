"""Geometry for server-rendered SVG charts (the template draws; no chart library)."""
WIDTH = 640
LABEL_WIDTH = 150
BAR_HEIGHT = 18
BAR_GAP = 6
LINE_HEIGHT = 220
PAD = 28


def _bars(summary: dict) -> dict:
    """Horizontal bars, one row per group, scaled to the largest absolute value."""
    points = summary["points"]
    top = max((abs(p["value"]) for p in points), default=0) or 1
    span = WIDTH - LABEL_WIDTH - 70
    rows = [{"label": p["label"], "value": p["value"], "count": p["count"],
             "y": i * (BAR_HEIGHT + BAR_GAP), "width": max(1, round(abs(p["value"]) / top * span)),
             "negative": p["value"] < 0} for i, p in enumerate(points)]
    return {"kind": "bar", "rows": rows, "height": max(1, len(rows)) * (BAR_HEIGHT + BAR_GAP),
            "label_width": LABEL_WIDTH}


def _line(summary: dict) -> dict:
    """A polyline over the dates in calendar order (no zero fill between them)."""
    points = summary["points"]
    values = [p["value"] for p in points]
    low, high = min(values, default=0), max(values, default=0)
    spread = (high - low) or 1
    step = (WIDTH - 2 * PAD) / max(1, len(points) - 1)
    dots = [{"label": p["label"], "value": p["value"], "count": p["count"],
             "x": round(PAD + i * step, 1),
             "y": round(PAD + (high - p["value"]) / spread * (LINE_HEIGHT - 2 * PAD), 1)}
            for i, p in enumerate(points)]
    return {"kind": "line", "dots": dots, "height": LINE_HEIGHT,
            "path": " ".join(f"{d['x']},{d['y']}" for d in dots), "low": low, "high": high}


def chart_figure(summary: dict) -> dict:
    """The summary plus what the SVG template needs to draw it."""
    shape = _line(summary) if summary["type"] == "line" else _bars(summary)
    return {**summary, **shape, "width": WIDTH}
