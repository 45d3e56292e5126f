"""What the provider reported about a call: usage, cache verdicts, and the session's totals.

``_usage`` normalizes each provider's usage to one shape, ``_verdict`` reads the
provider's own cache verdicts, ``_totals`` sums what a transcript reports for a session.
"""
