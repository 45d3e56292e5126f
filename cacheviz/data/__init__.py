"""Package data: the dated price overlay."""
