"""Presentation: everything a person looks at, built from an :class:`~cacheviz.analysis.Analysis`.

One private module per view of the inspector, named like its front end in
``widgets/src/views/`` (``_timeline``, ``_shape`` the shape map, ``_costs``, ``_header``,
``_providers``, ``_detail`` and its ``_content`` browser; ``_segment_rows`` the rows the
shape map and the browser read), each turning an analysis into that view's plain data;
``_state`` assembles them for one comparison target. ``widget`` (the notebook
inspector), ``live`` (the inspector that follows a request log, its rows appended by
``_live_state``) and ``report`` (the self-contained HTML file) only serialize that state;
``_scan`` is the scan view (a ``cacheviz scan`` result). Only this folder imports
Jupyter; a layer below reaches it only through an entry point of docs/architecture.md (an
analysis shown in a cell).
"""
