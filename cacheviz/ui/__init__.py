"""Presentation: everything a person looks at, built from an :class:`~cacheviz.analysis.Analysis`.

One module per view of the inspector, named like its front end in ``widgets/src/views/``
(``timeline``, ``shape``, ``costs``, ``header``, ``providers``, ``detail`` and its
``content`` browser; ``segment_rows`` the shape map's rows), each turning an analysis into
that view's plain data; ``state`` assembles them for one comparison target. ``widget``
(the notebook inspector), ``live`` (the inspector that follows a request log, its rows
appended by ``live_state``) and ``report`` (the self-contained HTML file) only serialize
that state; ``scan`` is the view of a ``cacheviz scan`` result. Only this folder imports
Jupyter; a layer below reaches it only through an entry point of docs/architecture.md (an
analysis shown in a cell).
"""
