"""How long a self-hosted engine takes to prefill a call: a cost model of its tokens.

A call's prefill evaluates its uncached tokens ``u`` after ``c`` cached ones. Each new
token costs a fixed amount (the weights) plus attention over the context before it, so
the time is::

    prefill_ms = fixed_ms + per_token_ms * u + per_pair_ms * u * (c + u / 2)

``u * (c + u / 2)`` is the number of (new token, earlier token) pairs attention scores.
The coefficients are the engine's and the model's: ``cacheviz replay`` fits them on the
user's engine (least squares over its calls' measured prefill times) and keeps them per
engine and model in the user cache folder (``prefill/<engine>--<model>.json``); without
a fit, :data:`DEFAULTS` (measured on this project's machine, docs/simulation.md) are used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from cacheviz._util.usercache import folder, write_atomic


@dataclass(frozen=True, slots=True)
class PrefillModel:
    """The coefficients of the prefill-time model (milliseconds)."""

    fixed_ms: float
    per_token_ms: float
    per_pair_ms: float
    source: str = "default"
    """``default`` (:data:`DEFAULTS`) or where the fit came from (``fitted by replay …``)."""

    def estimate(self, uncached: int, cached: int) -> float:
        """Milliseconds to prefill ``uncached`` tokens after ``cached`` cached ones."""
        if uncached <= 0:
            return 0.0
        return (
            self.fixed_ms
            + self.per_token_ms * uncached
            + self.per_pair_ms * pairs(uncached, cached)
        )


def pairs(uncached: int, cached: int) -> float:
    """Attention pairs of ``uncached`` new tokens after ``cached`` ones."""
    return uncached * (cached + uncached / 2)


# fitted 2026-12-06 by the engine tier on this project's machine (docs/simulation.md):
# llama.cpp (llama-cpp-python 0.3.36, CPU, one thread of a shared 2-core Xeon, its CPU
# time) with a random-weight qwen2 model of 4 layers of width 256, 100 calls of 1.5k-3k
# tokens; R^2 0.974
DEFAULTS = PrefillModel(fixed_ms=13.82, per_token_ms=0.1874, per_pair_ms=0.000191)


def fit(points: Iterable[tuple[int, int, float]], source: str) -> PrefillModel | None:
    """Least squares of ``(uncached, cached, ms)`` points; ``None`` with fewer than 3.

    The errors are relative (each point weighs ``1 / ms``): a call of 80 new tokens counts
    as much as one of 8,000, so the fixed cost of a short call is fitted as well as the
    per-token cost of a long one (a drift's factor is their ratio). A coefficient the fit
    makes negative is dropped (set to 0) and the others refitted.
    """
    rows = [(u, c, ms) for u, c, ms in points if u > 0 and ms > 0]
    if len(rows) < 3:
        return None
    active = [0, 1, 2]
    while True:
        coef = _solve(rows, active)
        if coef is None:
            return None
        negative = [k for k, v in zip(active, coef, strict=True) if v < 0]
        if not negative:
            break
        active = [k for k in active if k != negative[0]]
        if not active:
            return None
    values = [0.0, 0.0, 0.0]
    for k, v in zip(active, coef, strict=True):
        values[k] = v
    return PrefillModel(values[0], values[1], values[2], source)


def _features(u: int, c: int) -> tuple[float, float, float]:
    return (1.0, float(u), pairs(u, c))


def _solve(rows: list[tuple[int, int, float]], active: list[int]) -> list[float] | None:
    """Weighted normal equations on the ``active`` features (Gaussian elimination)."""
    n = len(active)
    a = [[0.0] * n for _ in range(n)]
    b = [0.0] * n
    for u, c, ms in rows:
        x = [value / ms for value in _features(u, c)]  # relative error: rows scaled by 1/ms
        for i, ki in enumerate(active):
            b[i] += x[ki]
            for j, kj in enumerate(active):
                a[i][j] += x[ki] * x[kj]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-12:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        b[col], b[pivot] = b[pivot], b[col]
        for r in range(n):
            if r != col:
                factor = a[r][col] / a[col][col]
                a[r] = [x - factor * y for x, y in zip(a[r], a[col], strict=True)]
                b[r] -= factor * b[col]
    return [b[i] / a[i][i] for i in range(n)]


def _path(engine: str, model: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{engine}--{model}")[:200]
    return f"{name}.json"


def load(engine: str, model: str) -> PrefillModel:
    """The fit kept for ``engine`` and ``model``, else :data:`DEFAULTS`."""
    path = folder("prefill") / _path(engine, model)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return PrefillModel(
            float(data["fixed_ms"]),
            float(data["per_token_ms"]),
            float(data["per_pair_ms"]),
            str(data.get("source", f"fitted ({path})")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULTS


def save(engine: str, model: str, fitted: PrefillModel) -> bool:
    """Keep ``fitted`` for ``engine`` and ``model``; whether it could be written."""
    path = folder("prefill") / _path(engine, model)
    return write_atomic(path, json.dumps(asdict(fitted), indent=1).encode())
