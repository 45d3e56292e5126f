"""The built front end, committed so installs need no Node (source: ``widgets/``).

``npm --prefix widgets run build`` writes four files here: ``plotly.js`` (plotly, once),
``inspector.js`` (the anywidget ESM), ``report.js`` (the HTML report's script) and
``loader.js`` (every widget's ``_esm``: it loads the widget's ESM once per page,
:mod:`cacheviz.ui._frontend`). Neither entry carries plotly: each expects ``plotly.js``
to have run first, and :func:`bundle` joins them, so the package ships plotly once while
the widget's ESM and the report's inline script stay self-contained (nothing is fetched
from a server at run time).
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent
PLOTLY = STATIC / "plotly.js"


def bundle(entry: str) -> str | None:
    """Plotly followed by the built ``entry`` (``"inspector.js"`` or ``"report.js"``).

    Parameters
    ----------
    entry
        The file name of the built entry in this folder.

    Returns
    -------
    str or None
        The script, or None when the front end is not built (either file missing).

    Examples
    --------
    Plotly runs first and sets the global the entry then reads:

    >>> script = bundle("inspector.js")
    >>> script.index("globalThis.__cachevizPlotly=") < script.index("=globalThis.__cachevizPlotly;")
    True
    >>> script.startswith(PLOTLY.read_text("utf-8"))
    True
    >>> script.endswith((STATIC / "inspector.js").read_text("utf-8"))
    True
    >>> bundle("no-such-entry.js") is None
    True
    """
    path = STATIC / entry
    if not (PLOTLY.is_file() and path.is_file()):
        return None
    # plotly.js is a plain script (an IIFE): it runs as the module's first statement in the
    # ESM, and as the first statement of the report's <script>
    return PLOTLY.read_text("utf-8") + ";\n" + path.read_text("utf-8")
