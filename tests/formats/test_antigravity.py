"""Antigravity's encrypted conversations are named in one line, never "not valid UTF-8"."""

import os

import pytest

import cacheviz
from cacheviz.errors import TranscriptError
from cacheviz.formats import detect


def conversation(home):
    folder = home / ".gemini" / "antigravity" / "conversations"
    folder.mkdir(parents=True)
    path = folder / "3f0c9a7e-5b1d-4c2a-9e8f-7a6b5c4d3e2f.pb"
    path.write_bytes(os.urandom(4096))  # ciphertext: no structure to find
    return path


def test_an_encrypted_conversation_is_named_in_one_line(tmp_path):
    path = conversation(tmp_path)
    assert detect(path) == "antigravity"
    with pytest.raises(TranscriptError) as info:
        cacheviz.load(path)
    message = str(info.value)
    assert "\n" not in message and "Antigravity encrypts" in message
    assert "UTF-8" not in message


def test_the_same_bytes_elsewhere_are_not_claimed(tmp_path):
    path = tmp_path / "x.pb"
    path.write_bytes(os.urandom(64))
    with pytest.raises(cacheviz.errors.UnknownFormatError):
        detect(path)
