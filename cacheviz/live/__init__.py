"""The analysis of a growing request log, extended call by call (the live inspector's).

``_incremental`` (``LiveLog``) reads the appended lines and extends the analysis,
``_costs`` prices each new call, ``_sim_stream`` extends a provider's replay.
"""
