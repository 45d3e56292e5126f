"""Recording: write the native request log while an agent runs.

``_recorder`` hooks the official SDKs (:func:`record`), ``_proxy`` is the local HTTP proxy
behind ``cacheviz proxy``, ``litellm_callback`` is the LiteLLM callback (public), and
``_log`` is the one writer all three share (redaction, one JSON line per call).
"""

from __future__ import annotations

from cacheviz.recording._recorder import Recorder, record

__all__ = ["Recorder", "record"]
