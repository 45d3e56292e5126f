"""Recording: write the native request log while an agent runs.

``recorder`` hooks the official SDKs (:func:`record`), ``proxy`` is the local HTTP proxy
behind ``cacheviz proxy``, ``litellm_callback`` is the LiteLLM callback, and ``log`` is the
one writer all three share (redaction, one JSON line per call).
"""

from __future__ import annotations

from cacheviz.recording.recorder import Recorder, record

__all__ = ["Recorder", "record"]
