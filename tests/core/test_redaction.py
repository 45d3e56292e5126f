"""Every secret kind is redacted on every surface that leaves Python."""

import io
import json
import re

import polars as pl
import pytest

import cacheviz
from cacheviz.redact import (
    MIN_FIELD_SECRET,
    REDACTED,
    redact,
    redact_all,
    redact_slice,
    redaction,
    secret_spans,
)
from cacheviz.ui import _header as header
from cacheviz.ui._detail import drift_detail
from cacheviz.ui._timeline import timeline
from cacheviz.ui.report import content_security_policy, read_details, report_data, write_report

# Made-up credentials of each kind (none is real), as they appear in transcripts.
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)
SERVICE_ACCOUNT_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
SECRETS = {
    "anthropic": "sk-ant-api03-Zx9vQ2mL7pR4tY8wK3nB6cF1hJ5dS0gA2eU7iO9qW4rT6yP3uI8oL1kJ-ZZZZAA",
    "openai": "sk-proj-Qm3Lk9Xv2Tb8Nw5Rc7Yh1Jd4Fs6Gp0Za",
    "aws-access-key-id": "AKIAZ7XQ4MNB2LPRW3TD",
    "aws-secret-access-key": "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",
    "github": "ghp_R7tY2uI9oP4aS6dF8gH1jK3lZ5xC0vB2nM4q",
    "github-fine-grained": "github_pat_11QWZ7RT0k9Xv2Lm4Pq8Sd_Hn3Jf6Kt1Yb5Wc7Ve0Rg2Ua4Zs9Ox",
    "google-api-key": "AIzaSyD4-xQ7mN2pL9kJ5hG3fD1sA8zX6cV0bB2",
    "slack": "xoxb-284710395721-4718290374652-Qw3Er5Ty7Ui9Op1As3Df5Gh",
    "stripe": "sk_live_51HqLyjWDarjtT1zdp7dcXyZ9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiaWF0IjoxNzAwMDAwMDAwfQ"
    ".Sfl3KxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "pem-private-key": PEM,
    "google-service-account": SERVICE_ACCOUNT_KEY,
    "bearer": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "password-field": "correct-horse-battery-staple",
}
CONTEXT = {
    "aws-secret-access-key": "aws_secret_access_key = {}",
    "google-service-account": (
        '{{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n{}\\n'
        '-----END PRIVATE KEY-----\\n"}}'
    ),
    "bearer": "Authorization: Bearer {}",
    "password-field": 'config: {{"password": "{}"}}',
}


def _in_context(kind):
    return CONTEXT.get(kind, "the key is {} here").format(SECRETS[kind])


def _pieces(secret, size=8):
    """Every run of ``size`` characters of the secret's distinctive part."""
    core = re.sub(
        r"^(sk-ant-api03-|sk-proj-|github_pat_|sk_live_|xoxb-|-----BEGIN.*?-----)", "", secret
    )
    core = core.replace("\n", "")
    return {core[i : i + size] for i in range(len(core) - size + 1)}


def _leaks(text):
    """The secret kinds of which any 8-character piece shows in ``text``."""
    flat = text.replace("\\n", "").replace("\n", "")
    return sorted(
        kind for kind, secret in SECRETS.items() if any(p in flat for p in _pieces(secret))
    )


@pytest.mark.parametrize("kind", list(SECRETS))
def test_every_pattern_is_redacted_whole(kind):
    text = _in_context(kind)
    out = redact(text)
    assert REDACTED in out
    assert _leaks(out) == []


def test_the_label_of_a_field_secret_stays():
    assert (
        redact("Authorization: Bearer Zm9vYmFyYmF6cXV4MTIz") == "Authorization: Bearer [REDACTED]"
    )
    assert redact("api_key=abcdefghijklmnop") == "api_key=[REDACTED]"
    assert redact('"password": "abcdefghijklmnop"') == '"password": "[REDACTED]"'


def test_the_minimum_field_secret_length_is_the_boundary():
    shorter = "x" * (MIN_FIELD_SECRET - 1)
    exact = "x" * MIN_FIELD_SECRET
    assert redact(f"password={shorter}") == f"password={shorter}"
    assert redact(f"password={exact}") == "password=[REDACTED]"


@pytest.mark.parametrize(
    "text",
    [
        "The token budget is 200k; keep the secret sauce; a password is needed.",
        "sk-learn is a library; AKIA is a prefix; eyJ alone is not a token",
        "Bearer of bad news",
    ],
)
def test_prose_is_left_alone(text):
    assert redact(text) == text


def test_redact_all_walks_lists_tuples_and_keys():
    key = SECRETS["anthropic"]
    value = {"a": [key, ("x", key)], key: {"deep": [[key]]}, "n": 3}
    out = json.dumps(redact_all(value))
    assert _leaks(out) == []
    assert json.loads(out)["n"] == 3


@pytest.mark.parametrize("cut", [5, 20, 40, 60])
def test_a_cut_through_a_secret_shows_no_piece_of_it(cut):
    key = SECRETS["anthropic"]
    text = "a" * 3000 + key + "b" * 3000
    start = 3000 + cut  # the window starts inside the key
    assert _leaks(redact_slice(text, start, start + 2000)) == []
    end = 3000 + cut  # ... or ends inside it
    assert _leaks(redact_slice(text, end - 2000, end)) == []
    assert redact_slice(text, 0, 100) == "a" * 100  # text away from it is untouched


def test_spans_cover_the_secret_not_its_label():
    text = "Authorization: Bearer Zm9vYmFyYmF6cXV4MTIz and more"
    [(start, end)] = secret_spans(text)
    assert text[start:end] == "Zm9vYmFyYmF6cXV4MTIz"


def test_redaction_can_be_turned_off_explicitly():
    text = _in_context("anthropic")
    with redaction(enabled=False):
        assert redact(text) == text
        assert redact_all([text]) == [text]
    assert redact(text) != text


# -- surfaces: drift detail (widget and report), meta, timeline, segments, report file ---------


def _body(first_text, tools):
    system = [
        {"type": "text", "text": "You are careful. " * 3000, "cache_control": {"type": "ephemeral"}}
    ]
    messages = [
        {"role": "user", "content": first_text},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "go on"},
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": system,
        **({"tools": tools} if tools else {}),
        "messages": messages,
    }


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Every secret kind in an edited first message: a rotating key, then a key at a cut."""
    from cacheviz.formats.native import record_line

    everything = "\n".join(_in_context(kind) for kind in SECRETS)
    old_key = SECRETS["anthropic"]
    new_key = old_key[:34] + ("ROTATEDx" * 8)[: len(old_key) - 34]
    # the second drift's text window (2,000 characters around the change) starts 19
    # characters before the end of a key
    edge = "x" * 1990 + f" {old_key} " + "y" * 980
    tool = [{"name": f"deploy_{SECRETS['github']}", "input_schema": {"type": "object"}}]
    texts = [
        f"{everything}\nexport ANTHROPIC_API_KEY={old_key}\n{'filler line' * 40}\n{edge}A{'z' * 1500}",
        f"{everything}\nexport ANTHROPIC_API_KEY={new_key}\n{'filler line' * 40}\n{edge}A{'z' * 1500}",
        f"{everything}\nexport ANTHROPIC_API_KEY={new_key}\n{'filler line' * 40}\n{edge}B{'z' * 1500}",
    ]
    lines = [
        record_line(
            _body(text, tool),
            provider="anthropic",
            model="claude-sonnet-4-5",
            api="messages",
            ts=f"2026-01-01T00:00:0{i}Z",
        )
        for i, text in enumerate(texts)
    ]
    path = tmp_path_factory.mktemp("planted") / f"session-{SECRETS['openai']}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    SECRETS["rotated"] = new_key
    analysis = cacheviz.load(path).analyze()
    assert analysis.drifts["call"].to_list() == [1, 2]
    return analysis


def test_the_rotating_key_drift_shows_no_piece_in_chips_or_text(planted):
    detail = drift_detail(planted, 1)
    chips = detail["chips"]
    assert REDACTED in chips["before"] + chips["current_after"] + chips["prev_after"]
    assert _leaks(json.dumps(chips)) == []
    assert _leaks(json.dumps(detail)) == []


def test_a_key_at_the_text_windows_edge_shows_no_piece(planted):
    detail = drift_detail(planted, 2)
    assert detail["current"]["text"].startswith("…[REDACTED]")
    assert _leaks(json.dumps(detail)) == []


def test_every_drift_detail_meta_and_table_is_redacted(planted):
    for call in range(planted.calls.height):
        assert _leaks(json.dumps(drift_detail(planted, call))) == []
    meta = header.meta(planted, ttl_seconds=300, simulation=None)
    assert _leaks(json.dumps(meta)) == []
    labels = timeline(planted)["label"].drop_nulls().to_list()
    assert _leaks(json.dumps(labels)) == []


def _report_text(data):
    """The report's data with its gzip-compressed call details inflated."""
    return json.dumps(data) + json.dumps(read_details(data))


def test_the_report_data_and_file_are_redacted(planted, tmp_path):
    assert _leaks(_report_text(report_data(planted))) == []
    html = write_report(planted, tmp_path / "r.html").read_text()
    assert _leaks(html) == []
    embedded = html.split('id="cacheviz-data">', 1)[1].split("</script>", 1)[0]
    assert _leaks(_report_text(json.loads(embedded))) == []


def test_the_widget_state_is_redacted(planted):
    from cacheviz.ui.widget import Inspector

    widget = Inspector(planted)
    for call in range(planted.calls.height):
        widget.selected_call = call
        state = widget.get_state()
        shown = {k: v for k, v in state.items() if k != "_esm" and isinstance(v, (dict, str, list))}
        assert _leaks(json.dumps(shown, default=str)) == [], call
    timeline = pl.read_ipc_stream(io.BytesIO(widget.get_state()["_timeline"]))
    assert _leaks(json.dumps(timeline["label"].drop_nulls().to_list())) == []


def test_the_report_can_keep_secrets_when_asked(planted, tmp_path):
    with redaction(enabled=False):
        data = _report_text(report_data(planted))
    assert "anthropic" in _leaks(data)


# -- item 20: the report's CSP ----------------------------------------------------------------


def test_the_csp_allows_only_the_inlined_script_by_hash(planted, tmp_path):
    import base64
    import hashlib

    html = write_report(planted, tmp_path / "r.html").read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";", 1)[0]
    assert "base-uri 'none'" in csp and "form-action 'none'" in csp
    assert "default-src 'none'" in csp
    code = html.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert content_security_policy("x") != content_security_policy("y")


def test_the_prefilter_finds_every_secret(monkeypatch):
    """Texts are searched only with the patterns that can match in them (their shortest
    match fits, a literal they need is there): that misses nothing the patterns find.
    ``test_redaction_gates.py`` checks every pattern in long texts."""
    from cacheviz import redact as module

    texts = [_in_context(kind) for kind in SECRETS]
    texts += list(SECRETS.values())
    texts += ["user#12", "tools[3] read_file", "password: short", "Bearer x", "xoxb-1-2"]
    texts += [f"AWS key {SECRETS['aws-secret-access-key']!r}", "ghp_" + "a" * 36]
    texts += [f"{'log line 10:42. ' * 40}{_in_context(kind)}" for kind in SECRETS]
    assert len(texts) > 40
    with_filter = [module.secret_spans(t) for t in texts]
    monkeypatch.setattr(module, "_needed", lambda text: list(module._patterns()))
    assert with_filter == [module.secret_spans(t) for t in texts]
    assert sum(bool(spans) for spans in with_filter) >= 2 * len(SECRETS) - 4


def test_the_patterns_load_without_importing_requests():
    """detect-secrets' plugins import ``requests``; redaction defers it (start-up time)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from cacheviz.redact import redact\n"
        "assert redact('Bearer abcdefghijklmnop1234') == 'Bearer [REDACTED]'\n"
        "assert 'requests' not in sys.modules and 'urllib3' not in sys.modules\n"
        "import requests\n"
        "from detect_secrets.plugins import aws\n"
        "assert type(requests).__name__ == 'module'\n"
        "assert aws.requests.get is requests.get\n"  # the stand-in became the real one
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


# -- issue 29: a key written to slip past a pattern is found as it reads ----------------------

KEY = SECRETS["anthropic"]


def _only_redacted(text: str, written: str) -> None:
    """``written`` (the key as the text writes it) is replaced whole, the rest is kept."""
    before, after = text.split(written)
    assert redact(text) == f"{before}{REDACTED}{after}"


@pytest.mark.parametrize("mark", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])
def test_a_key_split_by_an_invisible_character_is_redacted_whole(mark):
    written = KEY[:20] + mark + KEY[20:40] + mark + mark + KEY[40:]
    _only_redacted(f"key {written} end", written)


def test_a_key_with_a_fullwidth_or_mathematical_prefix_is_redacted_whole():
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in KEY[:13]) + KEY[13:]
    _only_redacted(f"key {fullwidth} end", fullwidth)
    bold = "\U0001d42c\U0001d424" + KEY[2:]  # mathematical bold s, k
    _only_redacted(f"« {bold} »", bold)


def test_a_percent_encoded_key_is_redacted_with_its_escapes():
    encoded = "".join(f"%{b:02X}" for b in KEY.encode())
    _only_redacted(f"GET /x?u={encoded} HTTP/1.1", encoded)
    partly = KEY[:30] + "%2D" + KEY[31:]
    _only_redacted(f"/v1?k={partly}&x=1", partly)
    # a value that holds escapes as written is still one (the decoded text would cut it)
    assert redact("password=a%20long%20phrase%20here") == "password=[REDACTED]"


def test_a_base64_key_is_redacted_as_the_whole_run():
    import base64

    encoded = base64.b64encode(f"ANTHROPIC_API_KEY={KEY}".encode()).decode()
    _only_redacted(f"data:\n  env: {encoded}\n", encoded)
    urlsafe = base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("=")
    _only_redacted(f"blob {urlsafe} end", urlsafe)
    plain = base64.b64encode(b"just some ordinary words, nothing secret here").decode()
    assert redact(f"blob {plain} end") == f"blob {plain} end"


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\\n"])
def test_a_key_wrapped_over_lines_is_redacted_with_its_break(brk):
    written = KEY[:50] + brk + KEY[50:]
    _only_redacted(f"key {written} end", written)
    short_start = KEY[:9] + brk + KEY[9:]  # the first line alone matches no pattern
    _only_redacted(f"key {short_start} end", short_start)


def test_a_line_after_a_key_that_is_no_rest_of_it_stays():
    """A label, a word or a token of its own on the next line is not taken for the rest."""
    env = f"ANTHROPIC_API_KEY={KEY}\nOPENAI_API_KEY={SECRETS['openai']}\nREGION=us"
    assert redact(env) == "ANTHROPIC_API_KEY=[REDACTED]\nOPENAI_API_KEY=[REDACTED]\nREGION=us"
    assert redact(f"key {KEY}\nThe end") == f"key {REDACTED}\nThe end"
    models = "gayanin/t5-small-paraphrasing-mlm-med-mask-filling-cm0\nlaurabernardy/LuxGPT2"
    assert redact(models) == models  # "mask-" joined to the next line holds no sk- key


@pytest.mark.parametrize(
    "text",
    [
        "signing_key=keys.signing_key)",
        "aws_access_key=aws_access_key,",
        "master_key = get_secret(master_key)",
        "    passphrase: Optional[str]",
        "self._encryption_key = encryption_key",
        "api_key=self.api_key_value_x",
        "  master_key: os.environ/LITELLM_MASTER_KEY",
        "DB_PASS=$DATABASE_PASSWORD",
        "token: {access_token_here}",
        "client_secret=[report_msg, other]",
    ],
)
def test_a_value_that_is_code_is_no_secret(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ETHERSCAN_API_KEY=your_etherscan_api_key", "ETHERSCAN_API_KEY=[REDACTED]"),
        ("DB_PASS=my_secret_password_2024", "DB_PASS=[REDACTED]"),
        ('"password": "correct-horse-battery-staple"', '"password": "[REDACTED]"'),
        ("SECRET_KEY_BASE=" + "ab12" * 32, "SECRET_KEY_BASE=[REDACTED]"),
        ("PWD=/home/user/projects/cacheviz", "PWD=/home/user/projects/cacheviz"),
        ("bypass=abcdefghijklmnopqrstuvwxyz", "bypass=abcdefghijklmnopqrstuvwxyz"),
        ("sort_key=created_at_timestamp_x", "sort_key=created_at_timestamp_x"),
        ("Authorization: Bearer your-api-key", "Authorization: Bearer your-api-key"),
    ],
)
def test_labels_and_values_the_env_forms_redact_and_keep(text, shown):
    assert redact(text) == shown


def test_a_view_maps_each_span_back_to_where_it_is_written():
    from cacheviz import redact as module

    text = "ab%41%42cd\u200bef"
    view, escaped = module._plain_view(text)
    assert (view.text, escaped) == ("abABcdef", True)
    assert view.original(2, 4) == (2, 8)  # "AB": both escapes
    assert view.original(3, 4) == (2, 8)  # "B": a run of escapes is one edit
    assert view.original(4, 7) == (8, 12)  # "cde": the invisible character inside
    assert view.original(0, 8) == (0, len(text))
    assert module._plain_view("plain ascii") is None
