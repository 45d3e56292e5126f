"""The built front end, committed so installs need no Node (source: ``widgets/``).

``npm --prefix widgets run build`` writes three files here: ``plotly.js`` (plotly, once),
``inspector.js`` (the anywidget ESM) and ``report.js`` (the HTML report's script). Neither
entry carries plotly: each expects ``plotly.js`` to have run first, and :func:`bundle`
joins them, so the package ships plotly once while the widget's ESM and the report's inline
script stay self-contained (nothing is fetched at run time).
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
    """
    path = STATIC / entry
    if not (PLOTLY.is_file() and path.is_file()):
        return None
    # plotly.js is a plain script (an IIFE): it runs as the module's first statement in the
    # ESM, and as the first statement of the report's <script>
    return PLOTLY.read_text("utf-8") + ";\n" + path.read_text("utf-8")
