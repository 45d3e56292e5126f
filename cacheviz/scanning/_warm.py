"""Imported once by the scan pool's fork server: see :mod:`cacheviz.scanning._child`."""

from cacheviz.scanning._child import warm

warm()
