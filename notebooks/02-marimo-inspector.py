"""The cacheviz inspector in a marimo notebook (anywidget works there as is).

    marimo edit notebooks/02-marimo-inspector.py     # interactive
    marimo export html notebooks/02-marimo-inspector.py -o inspector.html   # headless run
"""

import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    import cacheviz
    from cacheviz.ui.widget import Inspector

    session = mo.notebook_dir() / ".." / "sample_sessions" / "environment_details.jsonl"
    analysis = cacheviz.load(session).analyze()
    inspector = mo.ui.anywidget(Inspector(analysis))
    inspector
    return (inspector,)


@app.cell
def _(inspector):
    # the widget's synced state is there for Python, as in Jupyter
    widget = inspector.widget
    print("CALLS", widget.analysis.calls.height, "DRIFTS", widget.meta["totals"]["drifts"])
    return


if __name__ == "__main__":
    app.run()
