"""Imported once by the scan pool's fork server: see :mod:`cacheviz.fleet._child`."""

from cacheviz.fleet._child import warm

warm()
