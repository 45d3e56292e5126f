"""A LiteLLM callback that writes the cacheviz request log (docs/recording.md).

>>> import litellm  # doctest: +SKIP
>>> from cacheviz.recording.litellm_callback import CacheVizLogger  # doctest: +SKIP
>>> litellm.callbacks = [CacheVizLogger("run.jsonl", thread="main")]  # doctest: +SKIP

Each call LiteLLM makes (sync or async, streaming or not, success or failure) becomes one
line: the provider request body as LiteLLM built it (``complete_input_dict``: its key
order kept, serialized compactly, since LiteLLM does not hand out the bytes it sent),
the usage of the final response, the HTTP status of a failure. The API key and headers
are never written; secrets in bodies are redacted as in :func:`cacheviz.record`.
Needs ``litellm`` (``pip install 'cacheviz[litellm]'``).
"""

from __future__ import annotations

import atexit
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.recording._log import Exchange, LogWriter, Redactor, one_line, redact_body
from cacheviz.redact import redact as redact_secrets

_APIS = {"anthropic": "messages"}


def _iso(value: Any) -> str | None:
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, UTC)
    if not isinstance(value, datetime):
        return None
    value = value.astimezone(UTC)  # LiteLLM passes local naive times
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _usage(response: Any) -> dict[str, Any] | None:
    usage: Any = getattr(response, "usage", None)
    if usage is None and isinstance(response, dict):
        usage = response.get("usage")
    if hasattr(usage, "model_dump"):
        usage = usage.model_dump(exclude_none=True)
    return usage if isinstance(usage, dict) and usage else None


def _logger_class() -> type:
    """Define the callback class (importing litellm only when it is asked for)."""
    try:
        from litellm.integrations.custom_logger import CustomLogger
    except ImportError:
        msg = "the LiteLLM callback needs litellm: pip install 'cacheviz[litellm]'"
        raise ImportError(msg) from None

    class CacheVizLogger(CustomLogger):
        """Write every LiteLLM call to a cacheviz request log.

        Parameters
        ----------
        path
            The log to append to.
        thread
            A thread hint written as ``meta.thread``.
        meta
            Other ``meta`` keys for every line.
        redact
            ``True`` (default), ``False``, or a function ``str -> str``.
        """

        def __init__(
            self,
            path: str | Path,
            *,
            thread: str | None = None,
            meta: dict[str, Any] | None = None,
            redact: bool | Redactor = True,
        ) -> None:
            super().__init__()
            self.writer = LogWriter(path)
            self.writer.open()
            self.meta = {**(meta or {}), **({"thread": thread} if thread else {})} or None
            self.redactor = redact_secrets if redact is True else (redact or None)
            self._bodies: dict[str, dict[str, Any]] = {}  # litellm_call_id -> body, until the end
            atexit.register(self.close)

        def close(self) -> None:
            """Flush, fsync and close the log."""
            self.writer.close()

        def log_pre_api_call(self, model: Any, messages: Any, kwargs: Any) -> None:
            """LiteLLM hook: keep the body about to be sent (later hooks may no longer have it)."""
            body = (kwargs.get("additional_args") or {}).get("complete_input_dict")
            call_id = kwargs.get("litellm_call_id")
            if isinstance(body, dict) and body and call_id:
                if len(self._bodies) > 1000:  # calls that never ended
                    self._bodies.clear()
                self._bodies[call_id] = body

        def _write(self, kwargs: dict[str, Any], response: Any, start: Any, end: Any) -> None:
            try:
                body = self._bodies.pop(kwargs.get("litellm_call_id") or "", None)
                body = body or (kwargs.get("additional_args") or {}).get("complete_input_dict")
                if not isinstance(body, dict) or not body:
                    return
                if "extra_body" in body:  # an OpenAI SDK argument: merged into the body it sends
                    extra = body.get("extra_body") or {}
                    body = {k: v for k, v in body.items() if k != "extra_body"}
                    body.update(extra if isinstance(extra, dict) else {})
                params = kwargs.get("litellm_params") or {}
                provider = kwargs.get("custom_llm_provider") or params.get("custom_llm_provider")
                model = body.get("model") or kwargs.get("model") or ""
                api = _APIS.get(provider or "", "chat.completions")
                if "input" in body and "messages" not in body:
                    api = "responses"
                text = json.dumps(
                    body, ensure_ascii=False, separators=(",", ":"), default=_json_default
                )
                text = one_line(redact_body(text, self.redactor))
                exchange = Exchange([self.writer], provider, api, str(model), text, self.meta)
                exchange.ts = _iso(start) or exchange.ts
                exception = kwargs.get("exception")
                status = getattr(exception, "status_code", None) if exception is not None else 200
                out: dict[str, Any] = {"status": status, "usage": _usage(response)}
                if isinstance(start, datetime) and isinstance(end, datetime):
                    out["duration_ms"] = round((end - start).total_seconds() * 1000, 1)
                if exception is not None:
                    out["error"] = redact_secrets(f"{type(exception).__name__}: {exception}")
                self.writer.write(exchange.line(out))
            except Exception as exc:
                import warnings

                from cacheviz.errors import CacheVizWarning

                warnings.warn(
                    f"cacheviz could not record a LiteLLM call: {exc!r}",
                    CacheVizWarning,
                    stacklevel=2,
                )

        def log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            """LiteLLM hook: a call (or a whole stream) ended well."""
            self._write(kwargs, response_obj, start_time, end_time)

        def log_failure_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            """LiteLLM hook: a call failed."""
            self._write(kwargs, response_obj, start_time, end_time)

        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            """LiteLLM hook (async calls)."""
            self._write(kwargs, response_obj, start_time, end_time)

        async def async_log_failure_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            """LiteLLM hook (async calls)."""
            self._write(kwargs, response_obj, start_time, end_time)

    return CacheVizLogger


def _json_default(value: Any) -> Any:
    """A body value JSON has no type for, kept visible in the log (never dropped).

    Bytes as ``"base64:<the bytes in base64>"``, a date or time in ISO 8601, a set as a
    sorted list, anything else as its ``repr``.

    Examples
    --------
    >>> import datetime
    >>> _json_default(b"hi"), _json_default({3, 1}), _json_default(datetime.date(2026, 1, 2))
    ('base64:aGk=', [1, 3], '2026-01-02')
    """
    import base64
    import datetime

    if isinstance(value, (bytes, bytearray, memoryview)):
        return "base64:" + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:  # of mixed types: by their text
            return sorted(value, key=repr)
    return repr(value)


def __getattr__(name: str) -> Any:
    if name == "CacheVizLogger":
        cls = _logger_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)


__all__ = ["CacheVizLogger"]  # noqa: F822 - made on first access (__getattr__)
