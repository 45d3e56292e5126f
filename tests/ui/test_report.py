"""The HTML report without a browser: self-contained, escaped, redacted."""

import json
import re

import pytest

import cacheviz
from cacheviz import cli
from cacheviz.ui.report import embed_json, inline_script, read_details, report_data, write_report

SECRET = "sk-ant-api03-ThisIsNotARealKey0123456789"


@pytest.fixture
def leaky(write_log, anthropic_body):
    system = [
        {"type": "text", "text": "You are careful. " * 80, "cache_control": {"type": "ephemeral"}}
    ]
    first = [
        {
            "role": "user",
            "content": f"my key is {SECRET} and Authorization: Bearer abcdefghijklmnopqrstuv",
        }
    ]
    # the same message, edited: the key rotated and markup appended (one thread, one drift)
    second = [
        {
            "role": "user",
            "content": f"my key is {SECRET[:-4]}WXYZ and Authorization: Bearer "
            "abcdefghijklmnopqrstuv </script><!-- <script>alert(1)</script>",
        }
    ]
    return cacheviz.load(
        write_log([anthropic_body(first, system=system), anthropic_body(second, system=system)])
    ).analyze()


def test_secrets_are_redacted_and_details_precomputed(leaky):
    data = report_data(leaky)
    details = read_details(data)
    text = json.dumps(data) + json.dumps(details)
    assert SECRET not in text and "abcdefghijklmnopqrstuv" not in text
    assert "[REDACTED]" in text
    assert list(details["calls"]) == ["0", "1"]  # every call has its detail (defect 10)
    assert details["calls"]["1"]["cause"] == "content_edited"
    assert details["calls"]["0"]["drift"] is False


def test_every_call_shows_what_it_sent(leaky):
    details = read_details(report_data(leaky))
    first = details["calls"]["0"]["content"]
    # the first call sent the system prompt and its message: both past an empty prefix
    labels = [item["label"] for item in first["sent"]]
    assert any(label.startswith("system") for label in labels)
    message = next(item for item in first["sent"] if item["part"] == "messages")
    text = details["texts"][message["hash"]]
    assert "my key is [REDACTED]" in text and "Bearer [REDACTED]" in text
    second = details["calls"]["1"]["content"]
    assert [item["part"] for item in second["sent"]] == ["messages"]  # only the new message
    assert [item["part"] for item in second["context"]] == ["system"]  # logged system prompt
    assert "alert(1)" in details["texts"][second["sent"][0]["hash"]]  # text stays text


def test_the_report_opens_on_the_costliest_drift(leaky):
    assert report_data(leaky)["selected_call"] == 1


def test_the_file_is_self_contained_and_escaped(leaky, tmp_path):
    path = write_report(leaky, tmp_path / "r.html")
    html = path.read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|https?://[^\s\"']+\.(js|css)", html)
    data = html.split('<script type="application/json" id="cacheviz-data">', 1)[1].split(
        "</script>", 1
    )[0]
    assert "<" not in data  # no </script>, no <!-- can end or bend the data element
    assert json.loads(data)["meta"]["n_calls"] == 2
    assert html.count("</script>") == 2


def test_embedding_helpers():
    assert "<" not in embed_json({"a": "</script><!--"})
    assert "</script" not in inline_script('x = "</script>"; y = "<!--"')


def test_cli_report(leaky, tmp_path, capsys):
    out = tmp_path / "cli.html"
    assert cli.main(["report", str(leaky.session.path), "-o", str(out)]) == 0
    assert out.is_file() and "opens offline" in capsys.readouterr().out


def test_another_provider_prices_its_comparable_model(leaky):
    # defect 7: `--provider google` alone prices a Gemini model, not Claude-on-Vertex
    meta = report_data(leaky, provider="google")["meta"]
    assert meta["target"]["model"].startswith("gemini")
    assert "approximate" in meta["target"]["warning"]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_while_the_data_is_built_and_restored(
    leaky, tmp_path, monkeypatch, enabled
):
    import gc

    from cacheviz.ui import report

    during = []
    built = report.report_data

    def watched(*args, **kwargs):
        during.append(gc.isenabled())
        return built(*args, **kwargs)

    monkeypatch.setattr(report, "report_data", watched)
    (gc.enable if enabled else gc.disable)()
    try:
        write_report(leaky, tmp_path / "r.html")
        assert during == [False]
        assert gc.isenabled() is enabled  # as it was, not simply on
    finally:
        gc.enable()
