"""Presentation: everything a person looks at, built from an :class:`~cacheviz.analysis.Analysis`.

``state`` builds one inspector state from an analysis and a comparison target (``views``
and ``segment_rows`` give each view its data); ``widget`` (the notebook inspector),
``live`` (the inspector that follows a request log, its rows appended by ``live_state``),
``report`` (the self-contained HTML file) only serialize that state; ``scan`` is the view
of a ``cacheviz scan`` result. Only this folder imports Jupyter; a layer below reaches it
only through an entry point of docs/architecture.md (an analysis shown in a cell).
"""
