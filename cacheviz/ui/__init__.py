"""Presentation: everything a person looks at, built from an :class:`~cacheviz.Analysis`.

One module per view of the inspector, named like its front end in ``widgets/src/views/``
(``timeline``, ``shape``, ``costs``, ``header``, ``providers``, ``detail`` and its
``content`` browser), each turning an analysis into that view's plain data; ``state``
assembles them for one target. ``widget`` (the notebook inspector), ``live`` (the
inspector that follows a request log), ``report`` (the self-contained HTML file) and
``fleet`` (the ``scan`` report) only serialize it. Nothing in the core imports this
package.
"""
