"""OpenTelemetry GenAI spans (OpenInference, OpenLLMetry, OTel GenAI semantic conventions).

Tracing tools (Phoenix, Langfuse, Traceloop, an OTel collector's file exporter) keep one
span per LLM call. This reader takes such an export, JSON or JSONL, in either shape:

* **OTLP/JSON**: ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`` with
  ``attributes`` as ``[{"key", "value": {"stringValue" | "intValue" | ...}}]``
  (one export per line, or one document);
* **span objects**: one span per line (or a JSON array), ``attributes`` a dict of
  dotted keys or nested objects (OTel SDK ``span.to_json()``, Phoenix span exports).

A span is an LLM call when it carries the full messages, in one of the conventions:
``input.value`` holding the request body (OpenInference), ``llm.input_messages.N.message.*``
and ``llm.tools.N.tool.json_schema`` (OpenInference), ``gen_ai.prompt.N.*`` and
``llm.request.functions.N.*`` (OpenLLMetry), or ``gen_ai.input.messages`` /
``gen_ai.system_instructions`` / ``gen_ai.tool.definitions`` (OTel GenAI). Other spans
(chains, tools, retrievers, LLM spans without messages) are counted and left out.

The request is rebuilt from attributes, so calls are ``reconstructed`` (the bytes sent are
not in a trace). Token counts in these conventions include cached tokens.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cacheviz.errors import CacheVizWarning
from cacheviz.formats._body import call_from_request, provider_for
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session, Usage
from cacheviz.reported._usage import check_usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import ObjectScan, json_type

NAME = "otel"
DESCRIPTION = "OpenTelemetry GenAI spans (OpenInference / OpenLLMetry / OTel GenAI; OTLP JSON)"
_EXPECTED = "expected OTLP JSON (resourceSpans) or one span object with `attributes` per line"
_MARKERS = (b"openinference.span.kind", b"gen_ai.", b"llm.input_messages", b"llm.model_name")
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "azure": "openai", "google": "google"}
_PROVIDERS.update({"gemini": "google", "vertex_ai": "google", "deepseek": "deepseek"})
# OTel GenAI's gen_ai.provider.name values: x_ai, gcp.gemini / gcp.vertex_ai, aws.bedrock, ...
_PROVIDERS.update({"x_ai": "xai", "xai": "xai", "gcp": "google", "moonshot": "moonshot"})
# clouds that serve other vendors' models: the model's vendor sets the caching rules
_HOSTS = frozenset({"azure", "gcp", "vertex_ai", "aws"})
# (inclusive input, cache read, cache write, output) per convention, first found wins
_USAGE_KEYS = (
    ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    (
        "llm.token_count.prompt_details.cache_read",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
    ),
    (
        "llm.token_count.prompt_details.cache_write",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
    ),
    ("llm.token_count.completion", "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
)


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like an export of GenAI spans."""
    start = head[:4096]
    spans = b'"resourceSpans"' in start or (
        b'"attributes"' in start
        and (b'"span_id"' in start or b'"spanId"' in start or b'"context"' in start)
    )
    return spans and any(marker in head for marker in _MARKERS)


_MAX_DEPTH = 64  # nested arrayValue / kvlistValue levels read; deeper values are skipped
_SKIP = object()  # an attribute value that can't be read (the key is left out, and named)


def _otlp_value(value: Any, key: str, skipped: list[str], depth: int = 0) -> Any:
    if not isinstance(value, dict):
        return value
    for name in ("stringValue", "boolValue", "doubleValue"):
        if name in value:
            return value[name]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            text = str(value["intValue"])
            shown = f"{len(text):,} digits" if len(text) > 40 else repr(text)
            skipped.append(f"`{key}` (intValue {shown})")
            return _SKIP
    if depth >= _MAX_DEPTH and ("arrayValue" in value or "kvlistValue" in value):
        skipped.append(f"`{key}` (nested deeper than {_MAX_DEPTH} levels)")
        return _SKIP
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values", [])
        out = [_otlp_value(v, key, skipped, depth + 1) for v in items]
        return [v for v in out if v is not _SKIP]
    if "kvlistValue" in value:
        items = (value["kvlistValue"] or {}).get("values", [])
        return _otlp_attributes(items, skipped, f"{key}.", depth + 1)
    return None


def _otlp_attributes(
    items: Any, skipped: list[str], prefix: str = "", depth: int = 0
) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    out = {}
    for item in items:
        if isinstance(item, dict) and "key" in item:
            value = _otlp_value(item.get("value"), f"{prefix}{item['key']}", skipped, depth)
            if value is not _SKIP:
                out[item["key"]] = value
    return out


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    """Nested attribute objects (Phoenix) as dotted keys; lists of objects by index."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(inner, f"{prefix}{key}.", out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, inner in enumerate(value):
            _flatten(inner, f"{prefix}{i}.", out)
    else:
        out[prefix[:-1]] = value
    return out


def _spans(record: Any, skipped: list[str]) -> list[dict[str, Any]]:
    """The spans of one JSON record, each as ``{"attributes": flat dict, "start": ...}``.

    Attribute values that can't be read (an ``intValue`` past Python's digit limit, a
    value nested past :data:`_MAX_DEPTH`) are left out and named in ``skipped``.
    """
    if isinstance(record, list):
        return [s for r in record for s in _spans(r, skipped)]
    if not isinstance(record, dict):
        msg = "not a JSON object"
        raise ValueError(msg)
    if "resourceSpans" in record:
        spans = []
        for r, resource in enumerate(_objects(record.get("resourceSpans"), "resourceSpans")):
            where = f"resourceSpans[{r}]"
            key = "scopeSpans" if "scopeSpans" in resource else "instrumentationLibrarySpans"
            for c, scope in enumerate(_objects(resource.get(key), f"{where}.{key}")):
                where_spans = f"{where}.{key}[{c}].spans"
                for span in _objects(scope.get("spans"), where_spans):
                    attributes = _otlp_attributes(span.get("attributes"), skipped)
                    start = span.get("startTimeUnixNano")
                    spans.append(
                        {"attributes": attributes, "start": start, "name": span.get("name")}
                    )
        return spans
    if "attributes" not in record:
        msg = "no `attributes` and no `resourceSpans`"
        raise ValueError(msg)
    attributes = record["attributes"]
    if not isinstance(attributes, dict):
        attributes = _otlp_attributes(attributes, skipped)
    start = record.get("start_time", record.get("startTimeUnixNano", record.get("startTime")))
    return [
        {"attributes": _flatten(attributes, "", {}), "start": start, "name": record.get("name")}
    ]


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    """``value``, a list of objects (``None``: none); a ``ValueError`` naming ``where`` if not."""
    if value is None:
        return []
    if not isinstance(value, list):
        msg = f"field `{where}` is {json_type(value)}; expected an array of objects"
        raise ValueError(msg)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            msg = f"field `{where}[{i}]` is {json_type(item)}; expected an object"
            raise ValueError(msg)
    return value


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, int):
        try:
            return datetime.fromtimestamp(value / 1e9, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return parse_ts(value, "start_time")


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` keys grouped by N (in order) as ``{rest: value}`` dicts."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _openinference_messages(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for item in _indexed(attributes, "llm.input_messages."):
        message: dict[str, Any] = {"role": item.get("message.role", "user")}
        parts = _indexed(item, "message.contents.")
        if parts:
            message["content"] = [
                {"type": "text", "text": p.get("message_content.text", "")}
                for p in parts
                if p.get("message_content.type", "text") == "text"
            ]
        else:
            message["content"] = item.get("message.content", "")
        calls = _indexed(item, "message.tool_calls.")
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.get("tool_call.id", f"call_{i}"),
                    "type": "function",
                    "function": {
                        "name": c.get("tool_call.function.name", ""),
                        "arguments": c.get("tool_call.function.arguments", ""),
                    },
                }
                for i, c in enumerate(calls)
            ]
        if "message.tool_call_id" in item:
            message["tool_call_id"] = item["message.tool_call_id"]
        messages.append(message)
    return messages


def _openllmetry_messages(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for item in _indexed(attributes, "gen_ai.prompt."):
        content = _json(item.get("content", ""))
        message: dict[str, Any] = {"role": item.get("role", "user"), "content": content}
        calls = _indexed(item, "tool_calls.")
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id", f"call_{i}"),
                    "type": "function",
                    "function": {"name": c.get("name", ""), "arguments": c.get("arguments", "")},
                }
                for i, c in enumerate(calls)
            ]
        if "tool_call_id" in item:
            message["tool_call_id"] = item["tool_call_id"]
        messages.append(message)
    return messages


def _semconv_messages(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """OTel GenAI ``gen_ai.input.messages`` (role + parts) as chat messages."""
    messages = []
    system = _json(attributes.get("gen_ai.system_instructions"))
    if isinstance(system, list):
        text = "".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
        messages.append({"role": "system", "content": text})
    elif isinstance(system, str):
        messages.append({"role": "system", "content": system})
    raw = _json(attributes.get("gen_ai.input.messages"))
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        message: dict[str, Any] = {"role": item.get("role", "user")}
        texts, calls = [], []
        for part in item.get("parts") or []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "tool_call":
                arguments = part.get("arguments")
                arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
                function = {"name": part.get("name", ""), "arguments": arguments}
                calls.append({"id": part.get("id", ""), "type": "function", "function": function})
            elif kind == "tool_call_response":
                message = {"role": "tool", "tool_call_id": part.get("id", "")}
                response = part.get("response")
                texts.append(response if isinstance(response, str) else json.dumps(response))
        message["content"] = "".join(texts)
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
    return messages


def _tools(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    tools = []
    for item in _indexed(attributes, "llm.tools."):
        schema = _json(item.get("tool.json_schema"))
        if isinstance(schema, dict):
            tools.append(schema)
    for item in _indexed(attributes, "llm.request.functions."):
        function = {"name": item.get("name", ""), "description": item.get("description", "")}
        function["parameters"] = _json(item.get("parameters", {}))
        tools.append({"type": "function", "function": function})
    definitions = _json(attributes.get("gen_ai.tool.definitions"))
    if isinstance(definitions, list):
        tools.extend(d for d in definitions if isinstance(d, dict))
    return tools


def _to_anthropic(request: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions-shaped request as an Anthropic Messages body."""
    system = [m for m in request["messages"] if m.get("role") == "system"]
    messages = []
    for message in request["messages"]:
        role, content = message.get("role"), message.get("content")
        if role == "system":
            continue
        blocks = content if isinstance(content, list) else []
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}] if content else []
        if role == "tool":
            result = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", "")}
            messages.append({"role": "user", "content": [{**result, "content": content}]})
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            arguments = _json(function.get("arguments"))
            blocks = [
                *blocks,
                {
                    "type": "tool_use",
                    "id": call.get("id", ""),
                    "name": function.get("name", ""),
                    "input": arguments if isinstance(arguments, dict) else {},
                },
            ]
        messages.append({"role": role, "content": blocks})
    body: dict[str, Any] = {"model": request["model"]}
    if request.get("tools"):
        body["tools"] = [
            {
                "name": fn.get("name", ""),
                "description": fn.get("description", ""),
                "input_schema": fn.get("parameters", {}),
            }
            for fn in (t.get("function", t) for t in request["tools"])
        ]
    if system:
        body["system"] = [{"type": "text", "text": str(m.get("content", ""))} for m in system]
    body["messages"] = messages
    return body


def _first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((attributes[k] for k in keys if attributes.get(k) is not None), None)


def _usage(attributes: dict[str, Any]) -> Usage | None:
    """The span's token counts, checked once (:func:`~cacheviz.reported._usage.check_usage`).

    OTLP writes an ``intValue`` as a string of digits; another type, a count beyond the
    plausibility bound or a cache read above the input that includes it is a
    :class:`~cacheviz.errors.UsageError` naming the attribute.
    """
    values: list[Any] = []
    names: dict[str, str] = {}
    fields = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    for field, keys in zip(fields, _USAGE_KEYS, strict=True):
        key = next((k for k in keys if attributes.get(k) is not None), keys[0])
        names[field] = key
        value = attributes.get(key)
        if isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        values.append(value)
    if all(v is None for v in values):
        return None
    return check_usage(
        Usage(
            input_tokens=values[0],
            cache_read_tokens=values[1],
            cache_write_tokens=values[2],
            output_tokens=values[3],
            provenance="reported",
        ),
        names,
        prefix="",
    )


def _provider(named: str, model: str) -> str:
    """The provider whose caching rules apply: the span's named one, else the model's.

    A cloud serving several vendors' models (Claude on Vertex AI or Bedrock) is not the
    rule's provider: there the model's vendor wins when the model name tells it.
    """
    platform = named.split(".")[0]
    if platform in _HOSTS:
        # Bedrock's ids name the vendor first: "us.anthropic.claude-sonnet-4-5-...-v1:0"
        for name in (model, model.rsplit(".", 1)[-1]):
            vendor = provider_for(name)
            if vendor != "unknown":
                return vendor
    return _PROVIDERS.get(platform) or provider_for(model)


def _request(attributes: dict[str, Any]) -> tuple[dict[str, Any], str, str] | None:
    """``(request body, provider, api)`` of an LLM span, or ``None`` when it has no messages."""
    model = _first(attributes, ("llm.model_name", "gen_ai.request.model", "gen_ai.response.model"))
    named = str(
        _first(attributes, ("llm.provider", "gen_ai.provider.name", "gen_ai.system", "llm.system"))
        or ""
    ).lower()
    body = _json(attributes.get("input.value"))
    if isinstance(body, dict) and ("messages" in body or "input" in body):
        model = body.get("model") or model
        if not isinstance(model, str):
            return None
        provider = _provider(named, model)
        api = "responses" if "input" in body and "messages" not in body else None
        api = api or ("messages" if provider == "anthropic" else "chat.completions")
        return {"model": model, **body}, provider, api
    messages = (
        _openinference_messages(attributes)
        or _openllmetry_messages(attributes)
        or _semconv_messages(attributes)
    )
    if not messages or not isinstance(model, str):
        return None
    request: dict[str, Any] = {"model": model}
    tools = _tools(attributes)
    if tools:
        request["tools"] = tools
    request["messages"] = messages
    parameters = _json(attributes.get("llm.invocation_parameters"))
    if isinstance(parameters, dict):
        request.update({k: v for k, v in parameters.items() if k not in request})
    provider = _provider(named, model)
    if provider == "anthropic":
        return _to_anthropic(request), provider, "messages"
    return request, provider, "chat.completions"


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an export of GenAI spans into a :class:`~cacheviz.model.Session`.

    Parameters
    ----------
    path
        OTLP JSON / JSONL, or span objects (JSONL or a JSON array).
    errors
        ``"raise"`` stops at the first bad line; ``"skip"`` leaves it out.

    Raises
    ------
    TranscriptError
        On a bad line (``errors="raise"``) or when no span holds an LLM call.
    """
    reader = LineReader(path, errors=errors)
    store = BlockStore()
    refs: list[ObjectScan] = []
    calls: list[Call] = []
    skipped: list[str] = []

    def add(lineno: int, record: Any) -> None:
        for span in _spans(record, skipped):
            attributes = span["attributes"]
            found = _request(attributes)
            if found is None:
                kind = "LLM span without messages" if _is_llm(attributes) else "non-LLM span"
                reader.ignore(kind)
                continue
            request, provider, api = found
            call = call_from_request(
                request,
                refs,
                store,
                model=request["model"],
                provider=provider,
                api=api,
                ts=_time(span["start"]),
                usage=_usage(attributes),
                meta={"span": span.get("name")} if span.get("name") else None,
            )
            call.line = lineno
            calls.append(call)

    if _jsonl(path):
        reader.each_record(add, _EXPECTED)
    else:
        document = load_json_document(path)
        try:
            add(1, document)
        except ValueError as exc:
            reader.fail(None, f"{exc}; {_EXPECTED}")
    if skipped:
        shown = "; ".join(skipped[:5]) + (
            f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        )
        warnings.warn(
            f"{path}: skipped {len(skipped)} span attribute value(s) that can't be read: {shown}",
            CacheVizWarning,
            stacklevel=2,
        )
    return reader.session(NAME, calls, store, by_time=True)  # exported in any order


def _is_llm(attributes: dict[str, Any]) -> bool:
    return attributes.get("openinference.span.kind") == "LLM" or any(
        k.startswith("gen_ai.") for k in attributes
    )


def _jsonl(path: Path) -> bool:
    """Whether the file's first non-blank line is a JSON value of its own."""
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                try:
                    json.loads(line)
                except RecursionError:
                    return True  # one value per line; each_record names the line
                except ValueError:
                    return False
                return True
    return True


__all__ = ["DESCRIPTION", "NAME", "detect", "read"]
