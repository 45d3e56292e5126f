"""The cacheviz inspector in a marimo notebook: the README's one line, as in Jupyter.

    marimo edit notebooks/02-marimo-inspector.py     # interactive
    marimo export html notebooks/02-marimo-inspector.py -o inspector.html   # headless run

``cacheviz.inspect(...)`` returns one anywidget (its controls included), which marimo shows
as it is; a bare ``Analysis`` at the end of a cell is the same inspector.
"""

import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo

    import cacheviz

    session = mo.notebook_dir() / ".." / "sample_sessions" / "environment_details.jsonl"
    analysis = cacheviz.load(session).analyze()
    inspector = cacheviz.inspect(analysis)
    inspector
    return analysis, inspector


@app.cell
def _(inspector):
    # the widget's synced state is there for Python, as in Jupyter
    print("CALLS", inspector.analysis.calls.height, "DRIFTS", inspector.meta["totals"]["drifts"])
    print("SELECTED", inspector.selected_call, "PROVIDER", inspector.provider)
    return


@app.cell
def _(analysis):
    analysis  # a bare Analysis: the inspector too
    return


if __name__ == "__main__":
    app.run()
