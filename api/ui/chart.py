"""A small inline SVG chart: mean score per game of each entrant with its 95% interval."""

from __future__ import annotations

import math
from collections.abc import Iterable

WIDTH = 720
LABEL_W = 170
ROW_H = 26
PAD_TOP = 24
PAD_BOTTOM = 26
PAD_RIGHT = 20


def _nice_step(span: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about 5 ticks."""
    raw = span / 5 if span > 0 else 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def score_chart(rows: Iterable[tuple[str, float | None, float | None, float | None]]) -> dict | None:
    """Geometry of the chart for ``(label, mean, lo, hi)`` rows (rows without a mean skipped).

    Returns ``{"width", "height", "x0", "bars": [{"label", "y", "x", "w", "mean", "lo_x",
    "hi_x", "lo", "hi", "positive"}], "ticks": [{"x", "value"}]}`` (pixels), or None when
    nobody has played.
    """
    data = [(label, mean, lo, hi) for label, mean, lo, hi in rows if mean is not None]
    if not data:
        return None
    values = [0.0]
    for _, mean, lo, hi in data:
        values += [mean] + [v for v in (lo, hi) if v is not None]
    vmin, vmax = min(values), max(values)
    if vmax - vmin < 1e-9:
        vmin, vmax = vmin - 1, vmax + 1
    step = _nice_step(vmax - vmin)
    vmin = math.floor(vmin / step) * step
    vmax = math.ceil(vmax / step) * step
    plot_w = WIDTH - LABEL_W - PAD_RIGHT

    def x(v: float) -> float:
        return round(LABEL_W + (v - vmin) / (vmax - vmin) * plot_w, 1)

    bars = []
    for i, (label, mean, lo, hi) in enumerate(data):
        y = PAD_TOP + i * ROW_H
        x0, xm = x(0.0), x(mean)
        bars.append(
            {
                "label": label,
                "y": y,
                "x": min(x0, xm),
                "w": max(abs(xm - x0), 1.5),
                "mean": mean,
                "lo": lo,
                "hi": hi,
                "positive": mean >= 0,
                "lo_x": x(lo) if lo is not None else None,
                "hi_x": x(hi) if hi is not None else None,
                "mean_x": xm,
            }
        )
    ticks = []
    v = vmin
    while v <= vmax + step / 2:
        ticks.append({"x": x(v), "value": f"{v:g}"})
        v += step
    height = PAD_TOP + len(data) * ROW_H + PAD_BOTTOM
    return {
        "width": WIDTH,
        "height": height,
        "x0": x(0.0),
        "bars": bars,
        "ticks": ticks,
        "plot_top": PAD_TOP - 6,
        "plot_bottom": PAD_TOP + len(data) * ROW_H,
        "label_w": LABEL_W,
    }


RATING_W = 520
RATING_H = 150
RATING_PAD = (34, 14, 12, 24)  # left, right, top, bottom


def rating_chart(points: list[tuple[str, float, float]]) -> dict | None:
    """Geometry of a line chart of ratings: ``(label, mu, sigma)`` points in time order, the
    line through ``mu`` and a band ``mu ± sigma`` (openskill units).

    Returns ``{"width", "height", "line" (SVG points), "band" (SVG polygon points),
    "dots": [{"x", "y", "label", "mu", "sigma"}], "ticks": [{"y", "value"}], "left", "right"}``
    (pixels), or None without points.
    """
    if not points:
        return None
    lo = min(mu - sigma for _, mu, sigma in points)
    hi = max(mu + sigma for _, mu, sigma in points)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    step = _nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    left, right, top, bottom = RATING_PAD
    plot_w, plot_h = RATING_W - left - right, RATING_H - top - bottom

    def x(i: int) -> float:
        return round(left + (plot_w * i / (len(points) - 1) if len(points) > 1 else plot_w / 2), 1)

    def y(v: float) -> float:
        return round(top + (hi - v) / (hi - lo) * plot_h, 1)

    dots = [
        {"x": x(i), "y": y(mu), "label": label, "mu": mu, "sigma": sigma} for i, (label, mu, sigma) in enumerate(points)
    ]
    upper = [f"{x(i)},{y(mu + sigma)}" for i, (_, mu, sigma) in enumerate(points)]
    lower = [f"{x(i)},{y(mu - sigma)}" for i, (_, mu, sigma) in reversed(list(enumerate(points)))]
    ticks = []
    v = lo
    while v <= hi + step / 2:
        ticks.append({"y": y(v), "value": f"{v:g}"})
        v += step
    return {
        "width": RATING_W,
        "height": RATING_H,
        "line": " ".join(f"{d['x']},{d['y']}" for d in dots),
        "band": " ".join(upper + lower),
        "dots": dots,
        "ticks": ticks,
        "left": left,
        "right": RATING_W - right,
    }
