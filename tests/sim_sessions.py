"""The simulators' calls of every real session: what the simulators' oracle tests replay."""

from __future__ import annotations

import warnings
from pathlib import Path

from cacheviz.errors import CacheVizError
from cacheviz.providers._base import SimCall


def real_sim_calls(realdata: Path) -> list[list[SimCall]]:
    """The simulated calls of each file of ``realdata`` a reader takes (others skipped)."""
    from cacheviz.analysis import analyze
    from cacheviz.formats import READERS, detect
    from cacheviz.money._simulate import sim_calls

    out = []
    for path in sorted(realdata.rglob("*")):
        if not path.is_file() or path.suffix == ".md":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                analysis = analyze(READERS[detect(path)].read(path, errors="raise"))
            except (CacheVizError, OSError, ValueError):
                continue
        out.append(sim_calls(analysis))
    return out
