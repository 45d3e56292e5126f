"""What the inspector's views share: the Arrow wire format, thread names, shown labels.

Each view module (``_timeline``, ``_shape``, ``_costs``, ``_header``, ``_providers``,
``_detail``, ``_content``) computes one view's data from an analysis, as
``widgets/src/views/<view>.js`` draws it; ``widgets/src/views/panel.js`` is this
module's counterpart on the JS side.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import polars as pl

from cacheviz._schema import clean
from cacheviz.redact import redact

if TYPE_CHECKING:
    from cacheviz.analysis import Analysis


def ipc(frame: pl.DataFrame) -> bytes:
    """A frame as an Arrow IPC stream that any Arrow reader decodes."""
    buffer = io.BytesIO()
    frame.write_ipc_stream(buffer, compat_level=pl.CompatLevel.oldest())
    return buffer.getvalue()


def clean_label(text: str) -> str:
    """A segment's label as the views show it: cleaned, then redacted."""
    return redact(clean(text))


def thread_names(analysis: Analysis) -> list[str]:
    """The session's thread names, in order of first call (the views' thread indices)."""
    calls = analysis.calls
    return calls["thread"].unique(maintain_order=True).to_list()
