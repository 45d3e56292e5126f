"""In a real browser: the thread tree of a raw Claude Code capture with haiku side calls
has the main conversation as its root, named ``main``, and the side calls under it, named
for what they are (not ``claude-3-5-haiku-20241022#2``)."""

from pathlib import Path

import pytest

from cacheviz import cli

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

CAPTURE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "realdata"
    / "anthropic_raw"
    / "badlogic__lemmy__test-traffic.first10.jsonl"
)


def test_the_main_conversation_is_the_root_of_the_thread_tree(tmp_path, page):
    if not CAPTURE.is_file():
        pytest.skip("../shared/realdata is not present")
    out = tmp_path / "report.html"
    assert cli.main(["report", str(CAPTURE), "-o", str(out)]) == 0
    page.goto(out.as_uri())
    root = page.locator(".cacheviz-inspector")
    root.wait_for()
    options = root.locator("select[aria-label=thread] option")
    options.first.wait_for(state="attached")
    labels = [text.replace("\xa0", " ") for text in options.all_text_contents()]
    assert labels[0].startswith("all (")
    # the first thread is the root: main, not indented, holding most of the calls
    assert labels[1].startswith("main ("), labels
    others = labels[2:]
    assert others and all(label.lstrip().startswith("└ ") for label in others), labels
    assert all("side call" in label or "sub-agent" in label for label in others), labels
    # a side call is named for what it is; a number only tells same-named threads apart
    assert not any("20241022#" in label for label in labels), labels
    assert page.errors == [] and page.blocked == []
