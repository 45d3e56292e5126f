"""Fixtures of the ui tests."""

import pytest


class FakeComm:
    """Stands in for the kernel's comm: keeps what the widget sends."""

    comm_id = "fake-comm"
    kernel = object()

    def __init__(self):
        self.sent = []

    def on_msg(self, callback):
        pass

    def close(self, *args, **kwargs):
        pass

    def send(self, data=None, buffers=None):
        self.sent.append((data, buffers or []))

    def methods(self):
        return [(d["method"], d.get("content") or d.get("state")) for d, _ in self.sent]


@pytest.fixture
def fake_comm() -> FakeComm:
    """A comm that keeps what the widget sends (set it as ``inspector.comm``)."""
    return FakeComm()
