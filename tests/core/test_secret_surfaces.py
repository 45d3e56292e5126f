"""Every form of secret of the corpus by every surface a transcript's text reaches.

The corpus (``tests/secret_corpus.py``) holds each secret as a transcript carries it: keys
of every provider, private-key blocks, headers, ``.env`` lines, URLs with credentials, and
keys written so that a pattern misses them (split by an invisible character or a line
break, percent-encoded, base64, with a fullwidth prefix). Each is planted in a line of the
system prompt that changes on every call (so ``check`` quotes it and the drift detail
shows it) and sent through the proxy, ``record()`` and the LiteLLM callback. A surface
leaks when any 8-character run of the secret (or of its encoded form) shows in it.
The changing line puts the secret across ``check``'s 80-character cut: a surface that
cuts before it redacts shows a piece of it.

Surfaces: the three recorders' logs, the widget's synced state and its drift detail,
``check`` (text, ``--json``, SARIF, JUnit), the report's data, the scan page and the
scan's per-session inspector pages.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import cacheviz
from cacheviz.check import check
from cacheviz.check._output import to_junit, to_sarif
from cacheviz.cli import main
from cacheviz.formats.native import record_line
from cacheviz.redact import REDACTED, redact
from cacheviz.ui._detail import drift_detail
from cacheviz.ui.report import read_details, report_data

sys.path.insert(0, str(Path(__file__).parents[1]))  # fake_provider, secret_corpus
sys.path.insert(0, str(Path(__file__).parents[1] / "recording"))  # test_proxy

from secret_corpus import FORMS, ISSUE_29, ORDINARY, Form

SURFACES = (
    "proxy-log",
    "record-log",
    "litellm-log",
    "widget-state",
    "widget-drift-detail",
    "check-text",
    "check-json",
    "check-sarif",
    "check-junit",
    "report",
    "scan-html",
    "scan-session-pages",
)
CUT = 80  # check's quoted line is cut here
NAMES = list(FORMS)


def _secret_at(form: Form) -> int:
    """Where the secret starts in the form's text (the first piece of it that shows)."""
    found = [form.text.find(value[:8]) for value in form.hidden]
    return min((at for at in found if at >= 0), default=0)


def _line(form: Form, call: int) -> str:
    """The changing system line: the secret starts before the cut and ends after it."""
    start = _secret_at(form) + len(f"at 00:00:0{call} ")
    pad = max(0, CUT - 12 - start)
    return f"at 00:00:0{call} {'.' * pad} {form.text} end"


def _body(form: Form, call: int) -> dict:
    soul = " ".join(f"Rule {i}: keep the prefix stable, append changes." for i in range(120))
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": [{"type": "text", "text": f"{soul}\n{_line(form, call)}\nBe brief."}],
        "messages": [
            turn
            for i in range(call + 1)
            for turn in (
                {"role": "user", "content": f"case {NAMES.index(form.name)} question {i}"},
                {"role": "assistant", "content": f"answer {i}"},
            )
        ][:-1],
    }


def _usage() -> dict:
    return {
        "input_tokens": 10,
        "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 0,
        "output_tokens": 5,
    }


GROUP = 40  # sessions per scanned folder (the scan page lists 50: each gets its page)


def _write_session(folder: Path, form: Form) -> Path:
    lines = [
        record_line(
            _body(form, call),
            provider="anthropic",
            model="claude-sonnet-4-5",
            api="messages",
            ts=f"2026-01-01T00:0{call}:00Z",
            usage=_usage(),
        )
        for call in range(3)
    ]
    path = folder / f"group{NAMES.index(form.name) // GROUP}" / form.name / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("secrets")
    return {name: _write_session(folder, form) for name, form in FORMS.items()}


def _cli(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(args)
    return out.getvalue()


def _by_case(lines: list[str]) -> dict[str, str]:
    """Each log line by the form its request was about (``case N`` in its messages)."""
    out: dict[str, str] = {}
    for line in lines:
        case = re.search(r"case (\d+) question", line)
        assert case is not None, line[:200]
        out[NAMES[int(case.group(1))]] = line
    assert sorted(out) == sorted(NAMES), "a request was not logged"
    return out


def _wait_lines(log: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 60
    while True:
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


@pytest.fixture(scope="module")
def recorded_logs(tmp_path_factory) -> dict[str, dict[str, str]]:
    """The proxy's and ``record()``'s log line of a request holding each form."""
    pytest.importorskip("aiohttp", reason="the record extra is not installed")
    httpx2 = pytest.importorskip("httpx2", reason="the record extra is not installed")
    from fake_provider import FakeProvider
    from test_proxy import RunningProxy

    folder = tmp_path_factory.mktemp("recorded")
    bodies = [json.dumps(_body(form, 1)).encode() for form in FORMS.values()]
    with FakeProvider() as fake:
        with RunningProxy(fake.url, folder / "proxy.jsonl") as proxy, httpx2.Client() as client:
            for body in bodies:
                client.post(f"{proxy.url}/v1/messages", content=body)
            proxy_lines = _wait_lines(folder / "proxy.jsonl", len(bodies))
        with cacheviz.record(folder / "record.jsonl"), httpx2.Client() as client:
            for body in bodies:
                client.post(f"{fake.url}/v1/messages", content=body)
        record_lines = _wait_lines(folder / "record.jsonl", len(bodies))
    return {"proxy-log": _by_case(proxy_lines), "record-log": _by_case(record_lines)}


@pytest.fixture(scope="module")
def litellm_log(tmp_path_factory) -> dict[str, str]:
    """The LiteLLM callback's log line of a completion holding each form."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    litellm = pytest.importorskip("litellm", reason="the litellm extra is not installed")
    if saved is not None:  # importing litellm points it at its own folder
        os.environ["TIKTOKEN_CACHE_DIR"] = saved
    from fake_provider import FakeProvider

    from cacheviz.recording.litellm_callback import CacheVizLogger

    log = tmp_path_factory.mktemp("litellm") / "run.jsonl"
    logger = CacheVizLogger(log, thread="secrets")
    callbacks = litellm.callbacks
    litellm.callbacks = [logger]
    try:
        with FakeProvider() as fake:
            for form in FORMS.values():
                body = _body(form, 1)
                litellm.completion(
                    model="anthropic/claude-sonnet-4-5",
                    messages=[
                        {"role": "system", "content": body["system"][0]["text"]},
                        *body["messages"],
                    ],
                    api_base=fake.url,
                    api_key="made-up-key-for-the-fake-provider",
                    max_tokens=16,
                )
            lines = _wait_lines(log, len(FORMS))
    finally:
        litellm.callbacks = callbacks
        for name in dir(litellm):  # litellm copies a callback into its own lists: out of all
            found = getattr(litellm, name, None)
            if isinstance(found, list) and any(entry is logger for entry in found):
                found[:] = [entry for entry in found if entry is not logger]
        logger.close()
    return _by_case(lines)


def _page_data(html: str) -> str:
    """What an inspector page shows: its embedded data with the details inflated (the
    page's script is the same bundle on every page, no transcript text)."""
    embedded = html.split('id="cacheviz-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(embedded)
    return json.dumps(data, ensure_ascii=False) + json.dumps(read_details(data))


@pytest.fixture(scope="module")
def scan_pages(sessions, tmp_path_factory) -> dict[str, str]:
    """The scan pages of scans of every form's session, and their per-session pages."""
    from cacheviz.ui._scan import write_scan_report

    shown = {"scan-html": "", "scan-session-pages": ""}
    for group in sorted({path.parents[1] for path in sessions.values()}):
        result = cacheviz.scan([group], cache=False, jobs=1, progress=False)
        target = tmp_path_factory.mktemp("scan") / "scan.html"
        write_scan_report(result, target, inspectors=GROUP)
        pages = sorted((target.parent / "scan_sessions").glob("*.html"))
        assert len(pages) == len(list(group.iterdir())), "a session got no inspector page"
        shown["scan-html"] += target.read_text(encoding="utf-8")
        for page in pages:
            shown["scan-session-pages"] += _page_data(page.read_text(encoding="utf-8"))
    return shown


_ANALYSES: dict[str, Any] = {}


def _analysis(path: Path) -> Any:
    if str(path) not in _ANALYSES:
        _ANALYSES[str(path)] = cacheviz.load(path).analyze()
    return _ANALYSES[str(path)]


def _widget_state(path: Path) -> str:
    from cacheviz.ui.widget import Inspector

    analysis = _analysis(path)
    widget = Inspector(analysis)
    shown = []
    for call in range(analysis.calls.height):
        widget.selected_call = call
        state = widget.get_state()
        shown.append({k: v for k, v in state.items() if isinstance(v, (dict, str, list))})
    return json.dumps(shown, default=str, ensure_ascii=False)


def surface(name: str, form: str, path: Path, request: pytest.FixtureRequest) -> str:
    """The text ``name`` shows for the session at ``path`` (of the form ``form``)."""
    if name in ("proxy-log", "record-log"):
        return request.getfixturevalue("recorded_logs")[name][form]
    if name == "litellm-log":
        return request.getfixturevalue("litellm_log")[form]
    if name == "widget-state":
        return _widget_state(path)
    if name == "widget-drift-detail":
        analysis = _analysis(path)
        return json.dumps([drift_detail(analysis, c) for c in range(analysis.calls.height)])
    if name == "check-text":
        return _cli(["check", str(path)])
    if name == "check-json":
        return _cli(["check", str(path), "--json"])
    if name == "check-sarif":
        return json.dumps(to_sarif(check(path)))
    if name == "check-junit":
        return to_junit(check(path))
    if name == "report":
        data = report_data(_analysis(path))
        return json.dumps(data) + json.dumps(read_details(data))
    if name in ("scan-html", "scan-session-pages"):
        return request.getfixturevalue("scan_pages")[name]
    raise AssertionError(name)


@pytest.mark.parametrize("name", SURFACES)
@pytest.mark.parametrize("form", NAMES)
@pytest.mark.slow
# litellm's own models trip pydantic warnings (not ours to fix)
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_no_piece_of_a_secret_reaches_a_surface(form, name, sessions, request):
    shown = surface(name, form, sessions[form], request)
    assert FORMS[form].leaks(shown) == [], f"{form} on {name}"
    if name != "scan-html":  # the text around the secret does reach the surface
        assert "at 00:00:0" in shown, f"{name} shows no line of the transcript"


@pytest.mark.parametrize("form", NAMES)
def test_every_form_is_redacted_in_its_context(form):
    out = redact(FORMS[form].text)
    assert REDACTED in out
    assert FORMS[form].leaks(out) == []


def test_the_corpus_holds_the_forms_issue_29_found_missed():
    assert len(ISSUE_29) == 21
    assert set(ISSUE_29) <= set(FORMS)
    assert len(FORMS) >= 67


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_the_leak_check_sees_a_piece_however_it_is_escaped():
    """The check itself: a piece shown escaped (JSON, HTML, ``\\uXXXX``) is a leak."""
    form = FORMS["key-split-zero-width"]
    key = form.hidden[0]
    assert form.leaks(json.dumps({"t": form.text}))  # ZWSP as \\u200b, the key in two
    assert form.leaks(key[20:40].replace("/", "\\/"))
    assert form.leaks(redact(form.text)) == []


def test_check_quotes_the_changing_line_redacted_then_cut(sessions):
    """The quoted line still names where it changed: the text before the secret stays."""
    [finding] = [
        f for f in check(sessions["openai-project"]).findings if "changing line" in f.message
    ]
    assert "at 00:00:01" in finding.message or "at 00:00:02" in finding.message
    assert REDACTED in finding.message
