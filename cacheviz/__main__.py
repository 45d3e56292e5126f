"""``python -m cacheviz`` runs the command line."""

from cacheviz.cli import run

run()
