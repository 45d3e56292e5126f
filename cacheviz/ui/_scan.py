"""The scan view: sessions ranked by waste, the cache busters, daily billed vs ideal.

Two faces over the same data (:func:`scan_data`): a self-contained HTML page
(:func:`write_scan_report`: no script at all, no network, every text escaped and
secrets redacted) and a notebook widget (:class:`ScanView`, plain ipywidgets) where
picking a session opens its inspector below the list.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from cacheviz._util.visible import visible
from cacheviz.redact import redact

if TYPE_CHECKING:
    from cacheviz._writing import Inputs
    from cacheviz.scanning._result import ScanResult

TOP = 50
INSPECTORS = 20  # sessions of the scan report that get their own inspector report
_CHART_W, _CHART_H, _PAD = 760, 220, 40
_TICKS = 4  # y-axis labels above 0
_CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:right}
th:first-child,td:first-child,td.text{text-align:left}
code{font-size:12px}.muted{color:#777}
.billed{fill:#d9534f}.ideal{fill:#5cb85c}
"""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _text(value: Any) -> str:
    r"""Text for the page: redacted, control and bidi characters as ``\uXXXX``, escaped."""
    return html.escape(visible(redact(str(value))), quote=True)


def _money(value: float | None) -> str:
    return "–" if value is None else f"${value:,.2f}"


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _plain(value: Any) -> Any:
    """A text cell: a missing value is a dash, never the literal ``None``."""
    return "–" if value is None else value


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _short(session: str) -> str:
    """A session's folder and file name (the full path is in the Parquet tables)."""
    path = Path(session)
    return f"{path.parent.name}/{path.name}"


def scan_data(result: ScanResult, *, tz: str = "UTC", top: int = TOP) -> dict[str, Any]:
    """What the scan view shows, as plain values (rows of dicts)."""
    sessions = result.sessions.head(top).select(
        "session",
        "path",
        "format",
        "project",
        "calls",
        "hit_ratio",
        "billed_usd",
        "ideal_usd",
        "waste_usd",
        "reported_cost_usd",
        "drifts",
        "usage_only",
        "verdicts_compared",
        "verdicts_agree",
        "verdict_agree_rate",
    )
    sessions = sessions.with_columns(
        pl.col("session").map_elements(_short, return_dtype=pl.String).alias("name")
    )
    days = result.rollup("day", tz=tz).filter(pl.col("day").is_not_null())
    return {
        "totals": result.totals(),
        "duplicates_dropped": result.duplicates_dropped,
        "sessions": sessions.to_dicts(),
        "busters": result.busters.head(top).to_dicts(),
        "projects": result.projects.head(top).to_dicts(),
        "days": days.select("day", "billed_usd", "ideal_usd").to_dicts(),
        "failed": result.failed.to_dicts(),
        "tz": tz,
    }


def daily_chart(days: list[dict[str, Any]]) -> str:
    """An SVG bar chart of billed (red) and ideal (green) USD per day."""
    if not days:
        return "<p class='muted'>No call has a time.</p>"
    peak = max(max(d["billed_usd"] or 0, d["ideal_usd"] or 0) for d in days) or 1.0
    inner_w, inner_h = _CHART_W - 2 * _PAD, _CHART_H - 2 * _PAD
    slot = inner_w / len(days)
    bar = max(1.0, slot * 0.4)
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{_CHART_W}' height='{_CHART_H}' "
        f"role='img' aria-label='billed and ideal USD per day'>"
    ]
    every = max(1, len(days) // 8)
    for i, day in enumerate(days):
        x = _PAD + i * slot
        for offset, key in ((0.0, "billed_usd"), (bar, "ideal_usd")):
            value = day[key]
            if value is None:
                continue
            h = inner_h * value / peak
            css = key.split("_")[0]
            parts.append(
                f"<rect class='{css}' x='{x + offset:.1f}' y='{_PAD + inner_h - h:.1f}' "
                f"width='{bar:.1f}' height='{h:.1f}'><title>{_text(day['day'])} {css} "
                f"{_money(value)}</title></rect>"
            )
        if i % every == 0:
            parts.append(
                f"<text x='{x:.1f}' y='{_CHART_H - 12}' font-size='10'>{_text(day['day'])}</text>"
            )
    for step in range(_TICKS + 1):  # a labelled y axis: 0 to the peak, with grid lines
        value = peak * step / _TICKS
        y = _PAD + inner_h - inner_h * step / _TICKS
        parts.append(
            f"<line x1='{_PAD}' x2='{_CHART_W - _PAD}' y1='{y:.1f}' y2='{y:.1f}' "
            f"stroke='#eee'/><text x='{_PAD - 4}' y='{y + 4:.1f}' font-size='10' "
            f"text-anchor='end'>{_money(value)}</text>"
        )
    parts.append(f"<text x='4' y='{_PAD - 16}' font-size='11'>USD per day</text>")
    legend_x = _CHART_W - 170
    parts.append(
        f"<rect class='billed' x='{legend_x}' y='8' width='10' height='10'/>"
        f"<text x='{legend_x + 14}' y='17' font-size='11'>billed</text>"
        f"<rect class='ideal' x='{legend_x + 70}' y='8' width='10' height='10'/>"
        f"<text x='{legend_x + 84}' y='17' font-size='11'>ideal</text></svg>"
    )
    return "".join(parts)


def _table(
    rows: list[dict[str, Any]],
    columns: list[tuple[str, str, Any]],
    links: dict[str, str] | None = None,
) -> str:
    head = "".join(f"<th>{_text(title)}</th>" for title, _, _ in columns)
    body = []
    for row in rows:
        cells = []
        for i, (_, key, shown) in enumerate(columns):
            value = row.get(key)
            css = " class='text'" if shown is None else ""
            text = _text((shown or _plain)(value))
            link = (links or {}).get(row.get("session", "")) if i == 0 else None
            if link is not None:
                text = f"<a href='{_text(link)}'>{text}</a>"
            cells.append(f"<td{css}>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


_SESSION_COLUMNS = [
    ("session", "name", None),
    ("format", "format", None),
    ("project", "project", None),
    ("calls", "calls", _count),
    ("hit", "hit_ratio", _ratio),
    ("billed", "billed_usd", _money),
    ("ideal", "ideal_usd", _money),
    ("waste", "waste_usd", _money),
    ("agent's own cost", "reported_cost_usd", _money),
    ("drifts", "drifts", _count),
    ("provider verdicts agreed", "verdicts_agree", _count),
    ("compared", "verdicts_compared", _count),
    ("agree rate", "verdict_agree_rate", _ratio),
]
_BUSTER_COLUMNS = [
    ("kind", "kind", None),
    ("cause", "cause", None),
    ("part", "part", None),
    ("label", "label", None),
    ("count", "drifts", _count),
    ("sessions", "sessions", _count),
    ("tokens", "tokens", _count),
    ("cost", "cost_usd", _money),
]
_PROJECT_COLUMNS = [
    ("project", "project", None),
    ("sessions", "sessions", _count),
    ("calls", "calls", _count),
    ("billed", "billed_usd", _money),
    ("distinct system+tools prefixes", "prefixes", _count),
]


def _summary(data: dict[str, Any]) -> str:
    t = data["totals"]
    return (
        f"<p>{t['files']} files, {t['sessions']} sessions, {t['calls']:,} calls "
        f"({data['duplicates_dropped']} duplicates dropped); billed {_money(t['billed_usd'])}, "
        f"ideal {_money(t['ideal_usd'])}, waste {_money(t['waste_usd'])}; "
        f"{t['unknown_files']} unknown files skipped, "
        f"{t.get('empty_files') or 0} without a call, {t['failed_files']} failed.</p>"
    )


def scan_html(data: dict[str, Any]) -> str:
    """The whole scan page (no script; text escaped, secrets redacted)."""
    failed = ""
    if data["failed"]:
        failed = "<h2>Files that failed to load</h2>" + _table(
            data["failed"], [("file", "path", None), ("error", "error", None)]
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
        f"<title>cacheviz scan</title><style>{_CSS}</style></head><body>"
        "<h1>cacheviz scan</h1>"
        f"{_summary(data)}"
        f"<h2>Billed vs ideal per day ({_text(data['tz'])})</h2>{daily_chart(data['days'])}"
        "<h2>Sessions, most wasted first</h2>"
        "<p class='muted'>A linked session opens its inspector report; for the others: "
        "<code>cacheviz report PATH -o session.html</code>, or "
        "<code>cacheviz.inspect(PATH)</code> in a notebook.</p>"
        f"{_table(data['sessions'], _SESSION_COLUMNS, data.get('links'))}"
        f"<h2>Cache busters</h2>{_table(data['busters'], _BUSTER_COLUMNS)}"
        f"<h2>Projects</h2>{_table(data['projects'], _PROJECT_COLUMNS)}"
        f"{failed}</body></html>"
    )


def write_scan_report(
    result: ScanResult,
    path: str | Path,
    *,
    tz: str = "UTC",
    inspectors: int = INSPECTORS,
    option: str | None = None,
) -> Path:
    """Write the scan view as one self-contained HTML file; return its path.

    The ``inspectors`` most wasteful sessions also get their own inspector report (see
    :func:`cacheviz.ui.report.write_report`) in ``<name>_sessions/`` beside it, linked
    from the sessions table: clicking a session opens its inspector. Every page is
    written whole or not at all and never over a file the scan read
    (:mod:`cacheviz._writing`); ``option`` names the command-line option in an error.

    Raises
    ------
    CacheVizError
        When a page would overwrite a file the scan read, or cannot be written (one line).
    """
    from cacheviz._writing import guard, write

    target = Path(path)
    inputs = result.inputs()
    guard(target, inputs, option=option)
    data = scan_data(result, tz=tz)
    if inspectors:
        data["links"] = _session_reports(data["sessions"][:inspectors], target, inputs, option)
    return write(target, scan_html(data), what="scan report", option=option, inputs=inputs)


def _session_reports(
    sessions: list[dict[str, Any]], target: Path, inputs: Inputs, option: str | None
) -> dict[str, str]:
    """Write one inspector report per session; return session → relative link.

    A session that fails to load or analyse gets none (the table still lists it); a
    page that would overwrite an input, or cannot be written, is an error.
    """
    from cacheviz._writing import guard, make_folder
    from cacheviz.errors import CacheVizError
    from cacheviz.formats import load
    from cacheviz.ui.report import write_report

    folder = target.with_name(f"{target.stem}_sessions")
    pages = [folder / f"{rank:03d}.html" for rank in range(1, len(sessions) + 1)]
    for page in pages:  # refused before any is written
        guard(page, inputs, option=option)
    links: dict[str, str] = {}
    done: dict[str, str] = {}
    for page, session in zip(pages, sessions, strict=True):
        source = session["path"]
        if source in done:  # a ledger of several sessions: one report
            links[session["session"]] = done[source]
            continue
        try:
            analysis = load(source).analyze()
        except (CacheVizError, OSError, ValueError):
            continue  # the table still lists it; the report is best effort
        make_folder(folder, what="session reports' folder", option=option)
        written = write_report(analysis, page, option=option, inputs=inputs)
        done[source] = links[session["session"]] = f"{folder.name}/{written.name}"
    return links


class ScanView:
    """The scan in a notebook: summary, daily chart, busters, and the ranked sessions.

    Picking a session in the list opens its inspector (:func:`cacheviz.inspect`) below.
    """

    def __init__(self, result: ScanResult, *, tz: str = "UTC") -> None:
        import ipywidgets as w

        self.result = result
        self.data = scan_data(result, tz=tz)
        options = [
            (
                f"{_money(s['waste_usd'])} waste · {_money(s['billed_usd'])} billed · "
                f"{s['calls']} calls · {redact(s['name'])}",
                s["path"],
            )
            for s in self.data["sessions"]
        ]
        self.sessions = w.Select(options=options, value=None, rows=min(12, len(options) or 1))
        self.sessions.layout.width = "100%"
        self.inspector = w.VBox([])
        self.sessions.observe(self._open, names="value")
        head = (
            f"{_summary(self.data)}<h4>Billed vs ideal per day</h4>"
            f"{daily_chart(self.data['days'])}<h4>Cache busters</h4>"
            f"{_table(self.data['busters'][:10], _BUSTER_COLUMNS)}"
            "<h4>Sessions, most wasted first (pick one to inspect it)</h4>"
        )
        self.widget = w.VBox([w.HTML(head), self.sessions, self.inspector])

    def _open(self, change: dict[str, Any]) -> None:
        from cacheviz.formats import load
        from cacheviz.ui.widget import inspect

        path = change["new"]
        self.inspector.children = [] if path is None else [inspect(load(path).analyze())]

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
