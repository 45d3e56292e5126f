"""Inspect AI evaluation logs (``.json``): one call per ``model`` event of each sample.

Each model event keeps the raw provider request (``call.request``) and response
(``call.response``). Long strings are stored once per sample as ``attachment://<md5>``
references into ``sample.attachments``: they are resolved before hashing, so a block's
hash is that of the text the provider saw. The log holds parsed JSON, so request bodies
are re-serialized compactly (key order kept; whitespace and escaping as sent are not
recoverable). Each sample (and epoch) is its own thread. Binary ``.eval`` logs are zip
archives: convert them with ``inspect log convert --to json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cacheviz.errors import TranscriptError
from cacheviz.formats._body import call_from_request, provider_for
from cacheviz.formats._lines import LineReader, load_json_document
from cacheviz.formats._time import parse_ts
from cacheviz.model import Call, Session
from cacheviz.reported._usage import normalize_usage
from cacheviz.request._blocks import BlockStore, RenderError
from cacheviz.request._jsonspan import JSONSyntaxError, ObjectScan, json_type

NAME = "inspect"
DESCRIPTION = "Inspect AI eval logs (.json; model events with call.request)"
_ATTACHMENT = "attachment://"


def detect(path: Path, head: bytes) -> bool:
    """Whether ``head`` looks like an Inspect AI log (JSON or zipped ``.eval``)."""
    if head.startswith(b"PK\x03\x04"):
        return path.suffix == ".eval"
    start = head.lstrip()[:4096]
    return start.startswith(b"{") and b'"eval"' in start and b'"version"' in start


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            found = attachments.get(value[len(_ATTACHMENT) :])
            return found if isinstance(found, str) else value
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _usage(event: dict[str, Any]) -> Any:
    call = event.get("call")
    response = call.get("response") if isinstance(call, dict) else None
    raw = response.get("usage") if isinstance(response, dict) else None
    usage = normalize_usage(raw)
    if usage is not None:
        return usage
    output = event.get("output")  # Inspect's own normalized usage
    ours = output.get("usage") if isinstance(output, dict) else None
    if not isinstance(ours, dict):
        return None
    return normalize_usage(
        {
            "prompt_tokens": ours.get("input_tokens"),
            "completion_tokens": ours.get("output_tokens"),
            "prompt_tokens_details": {"cached_tokens": ours.get("input_tokens_cache_read")},
        }
    )


def _model_call(
    event: dict[str, Any],
    attachments: dict[str, Any],
    thread: str,
    refs: list[ObjectScan],
    store: BlockStore,
) -> Call:
    call = event.get("call")
    request = call.get("request") if isinstance(call, dict) else None
    if not isinstance(request, dict):
        msg = f"`call.request` is {json_type(request)}; expected the raw provider request"
        raise ValueError(msg)
    model = event.get("model")
    model = model if isinstance(model, str) and model else request.get("model")
    if not isinstance(model, str) or not model:
        msg = "no model on the event or in `call.request.model`"
        raise ValueError(msg)
    provider, _, bare = model.partition("/") if "/" in model else (provider_for(model), "", model)
    return call_from_request(
        _resolve(request, attachments),
        refs,
        store,
        model=bare,
        provider=provider,
        api=None,
        ts=parse_ts(event.get("timestamp")),
        usage=_usage(event),
        thread=thread,
        reconstructed=False,  # the body as logged, only re-serialized
    )


def read(path: Path, *, errors: str = "raise") -> Session:
    """Read an Inspect AI JSON log; see :func:`cacheviz.formats.load` for ``errors``."""
    if path.suffix == ".eval":
        msg = (
            "a zipped .eval log; convert it with `inspect log convert --to json` and load the .json"
        )
        raise TranscriptError(msg, path=path)
    document = load_json_document(path)
    reader = LineReader(path, errors=errors)
    if not isinstance(document, dict) or not isinstance(document.get("samples", []), list):
        msg = "expected an Inspect AI log object with a `samples` list"
        raise TranscriptError(msg, path=path)
    store = BlockStore()
    calls: list[Call] = []
    for s, sample in enumerate(document.get("samples") or []):
        if not isinstance(sample, dict):
            reader.fail(None, f"samples[{s}] is {json_type(sample)}; expected an object")
            continue
        attachments = sample.get("attachments")
        attachments = attachments if isinstance(attachments, dict) else {}
        thread = f"sample:{sample.get('id', s)}:{sample.get('epoch', 1)}"
        refs: list[ObjectScan] = []
        events = sample.get("events")
        for e, event in enumerate(events if isinstance(events, list) else []):
            if not isinstance(event, dict) or event.get("event") != "model":
                continue
            where = f"samples[{s}].events[{e}]"
            try:
                call = _model_call(event, attachments, thread, refs, store)
            except RenderError as exc:
                reader.fail(None, f"{where}: {exc} (field `call.{exc.field}`)")
                continue
            except (JSONSyntaxError, ValueError) as exc:
                reader.fail(None, f"{where}: {exc}")
                continue
            call.line = e
            call.meta["event"] = where
            calls.append(call)
    return reader.session(NAME, calls, store)


__all__ = ["DESCRIPTION", "NAME", "detect", "read"]
