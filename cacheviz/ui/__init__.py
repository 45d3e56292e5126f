"""Presentation: everything a person looks at, built from an :class:`~cacheviz.Analysis`.

``views`` turns an analysis into the plain data every surface shows; ``widget`` (the
notebook inspector), ``live`` (the inspector that follows a request log), ``report`` (the
self-contained HTML file) and ``fleet`` (the ``scan`` report) only serialize it. Nothing in
the core imports this package.
"""
