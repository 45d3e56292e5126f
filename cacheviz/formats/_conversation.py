"""Rebuild requests from conversation logs (Claude Code, Codex, Cline, Gemini CLI, ...).

These logs keep the messages but not the bytes sent, nor the system prompt and tool
schemas. Each call's request is rebuilt as: one opaque *unlogged prefix* block (its size
is inferred later from reported usage, see ``analysis._size_unlogged``), then every
message so far, serialized compactly in the provider's message shape. Calls built here
are marked ``reconstructed``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cacheviz._util import fastjson
from cacheviz.model import OPAQUE, Block, Call, Content, Usage
from cacheviz.request._blocks import BlockStore
from cacheviz.request._jsonspan import digest

UNLOGGED_LABEL = "unlogged prefix"


def unlogged_block(store: BlockStore, key: str) -> Block:
    """The opaque block standing for thread ``key``'s unlogged system prompt and tools."""
    raw = f"unlogged prefix of {key}".encode()
    digest_ = digest(raw)
    if digest_ not in store.contents:
        store.contents[digest_] = Content(b"", {"unlogged": key}, OPAQUE)
    block = Block(len(store.blocks), "system", 0, UNLOGGED_LABEL, digest_)
    store.blocks.append(block)
    return block


class Thread:
    """One thread's conversation, turned into reconstructed requests.

    Parameters
    ----------
    store
        The session's block store.
    key
        The thread: threads with different keys get different unlogged prefixes
        (a sub-agent has its own system prompt).
    api
        The API whose message shape the messages are in (``messages`` for Anthropic,
        ``responses`` for OpenAI items, ...).
    """

    def __init__(self, store: BlockStore, key: str, api: str = "messages") -> None:
        self.store = store
        self.key = key
        self.api = api
        self.messages: list[dict[str, Any]] = []
        self._blocks: list[Block] = [self._unlogged()]
        self._hashes: list[str] = [self._blocks[0].hash]  # the blocks' hashes, kept beside
        self._clean = 0  # messages[:_clean] have up-to-date blocks

    def _unlogged(self) -> Block:
        return unlogged_block(self.store, self.key)

    def _add(self, position: int, label: str, raw: bytes) -> Block:
        """Register one rebuilt message block; its content keeps the bytes only.

        The bytes are the message as its request is rebuilt, so its value is exactly
        their JSON: parsed when read (:meth:`Content.unparsed`), not held as a second
        copy of the text, and never shared with the reader's message dicts, which it
        may still edit.
        """
        store = self.store
        hash_ = digest(raw)
        if hash_ not in store.contents:
            store.contents[hash_] = Content.unparsed(raw, f"message:{self.api}")
        block = Block(len(store.blocks), "messages", position, label, hash_)
        store.blocks.append(block)
        return block

    def append(self, message: dict[str, Any]) -> None:
        """Add a message at the end of the conversation."""
        self.messages.append(message)

    def replace(self, messages: list[dict[str, Any]]) -> None:
        """Replace the whole conversation (a compaction, a truncation)."""
        self.messages = list(messages)
        self._clean = 0
        del self._blocks[1:]
        del self._hashes[1:]

    def touch(self, index: int) -> None:
        """Mark message ``index`` as changed in place (content merged into it)."""
        self._clean = min(self._clean, index)

    def call(
        self,
        *,
        model: str,
        provider: str,
        ts: datetime | None,
        usage: Usage | None,
        meta: dict[str, Any] | None = None,
    ) -> Call:
        """A reconstructed request of everything in the conversation now."""
        del self._blocks[1 + self._clean :]
        del self._hashes[1 + self._clean :]
        for position in range(self._clean, len(self.messages)):
            message = self.messages[position]
            raw = fastjson.compact_bytes(message)
            role = message.get("role") or message.get("type") or "item"
            block = self._add(position, f"{role}#{position}", raw)
            self._blocks.append(block)
            self._hashes.append(block.hash)
        self._clean = len(self.messages)
        return Call(
            -1,
            0,
            ts,
            provider,
            self.api,
            model,
            list(self._blocks),
            usage,
            self.key,
            meta or {},
            reconstructed=True,
            hashes=list(self._hashes),  # what Call would derive from the blocks, copied
            message_start=1,
        )
