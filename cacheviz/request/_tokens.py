"""Tokenization: encodings, the model → encoding map, and a content-addressed token cache.

Each distinct block is tokenized once per encoding, whatever the number of requests that
re-send it. Counts are exact only for models whose tokenizer tiktoken ships (OpenAI);
Claude, Gemini, DeepSeek and unknown models are counted with ``o200k_base`` and
flagged approximate.

Conversation messages are wrapped as chat templates do: a start marker, the role, the
content, an end marker (OpenAI documents three tokens of framing per message). The two
markers are synthetic ids (negative numbers) so that text can never forge them, and so
that a message edited by appending text no longer matches at its old end.
"""

from __future__ import annotations

import functools
import os
from array import array
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cacheviz.errors import EncodingUnavailableError
from cacheviz.model import OPAQUE, Content
from cacheviz.request._blocks import render_text

if TYPE_CHECKING:
    from tiktoken import Encoding

DEFAULT_ENCODING = "o200k_base"
MESSAGE_START = -1
MESSAGE_END = -2
UNLOGGED = -3  # one token of a prefix the transcript did not log (size inferred)
# The first token of an unlogged prefix identifies it (two unlogged prefixes of different
# threads are not known to be equal, so they never share a token): UNLOGGED_ID - n.
UNLOGGED_ID = -1000
_BATCH_CHARS = 4_000_000
_KEPT_TOKENS = 1 << 21  # token arrays kept for reuse (~8 MB): the blocks compared lately


@functools.cache
def encoding_for_model(model: str) -> tuple[str, bool]:
    """Return ``(encoding name, is_exact)`` for a model.

    Remembered per model: tiktoken's map is fixed, and the analysis asks once per call.

    Examples
    --------
    >>> encoding_for_model("gpt-4o")
    ('o200k_base', True)
    >>> encoding_for_model("claude-sonnet-4-5")
    ('o200k_base', False)
    """
    from tiktoken.model import encoding_name_for_model

    for candidate in (model, model.rsplit("/", 1)[-1]):
        try:
            return encoding_name_for_model(candidate), True
        except KeyError:
            continue
    return DEFAULT_ENCODING, False


@functools.cache
def get_encoding(name: str) -> Encoding:
    """Load a tiktoken encoding, or explain in one line how to make it loadable.

    The ranks come from the binary copy :mod:`cacheviz.request._encodings` keeps when it fits
    (the same encoding, built ~0.2-0.4 s faster), else from tiktoken's own loading.
    """
    from cacheviz.request import _encodings

    try:
        encoding = _encodings.load(name)
    except ValueError as exc:
        msg = f"unknown tiktoken encoding {name!r} ({exc}); use o200k_base or cl100k_base"
        raise EncodingUnavailableError(msg) from None
    except Exception as exc:
        where = os.environ.get("TIKTOKEN_CACHE_DIR")
        hint = (
            f"TIKTOKEN_CACHE_DIR={where} does not hold it"
            if where
            else "no network and TIKTOKEN_CACHE_DIR is not set"
        )
        msg = (
            f"tiktoken encoding {name!r} could not be loaded ({hint}; {type(exc).__name__}). "
            "Set TIKTOKEN_CACHE_DIR to a writable folder holding tiktoken's cached files "
            "(e.g. a copy of ../shared/tiktoken), or run once with internet access"
        )
        raise EncodingUnavailableError(msg) from None
    _loaded.add(name)
    return encoding


_RESTRICTED_CHARS = 32_000  # per process and encoding: see encoding_for_texts
_restricted_chars: dict[str, int] = {}
_loaded: set[str] = set()


def encoding_for_texts(name: str, texts: list[str]) -> Encoding:
    """The encoding to tokenize ``texts`` with: the ids of ``get_encoding(name)``, always.

    Building tiktoken's encoder of a whole table (200,000 ranks) takes ~0.15 s, most of a
    short command's start-up. Until ``_RESTRICTED_CHARS`` characters were tokenized with
    ``name`` in this process (a sample, a short session), the texts are encoded by an
    encoding of only the ranks that occur in them (:func:`cacheviz.request._encodings.restricted`);
    past that, or once the whole encoding is loaded, by the whole encoding.
    """
    if name not in _loaded:
        size = _restricted_chars.get(name, 0) + sum(map(len, texts))
        if size <= _RESTRICTED_CHARS:
            from cacheviz.request import _encodings

            encoding = _encodings.restricted(name, texts)
            if encoding is not None:
                _restricted_chars[name] = size
                return encoding
    return get_encoding(name)


_NO_SPECIAL: frozenset[str] = frozenset()


def token_count(enc: Encoding, text: str) -> int:
    """``len(enc.encode_ordinary(text))``, without building the list of ids.

    tiktoken's core encodes into a buffer of 4-byte ids when asked for no special token
    (the same ids: text that looks like a special token is encoded as ordinary text), and
    skips the Python list of ints (~10 % of the time on transcripts). A lone surrogate is
    replaced first, as :meth:`tiktoken.Encoding.encode_ordinary` does.

    Examples
    --------
    >>> enc = get_encoding("o200k_base")
    >>> token_count(enc, "hello <|endoftext|> world") == len(enc.encode_ordinary(
    ...     "hello <|endoftext|> world"))
    True
    """
    core = enc._core_bpe
    try:
        ids = core.encode_to_tiktoken_buffer(text, _NO_SPECIAL)
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        ids = core.encode_to_tiktoken_buffer(text, _NO_SPECIAL)
    # its buffer's length in bytes (tiktoken 0.14 also gives that as the item count)
    return memoryview(ids).nbytes // 4


SIZES = ("tokens", "bytes")
"""How a :class:`TokenCache` sizes a block: BPE tokens, or pseudo-tokens of its bytes."""
_BYTES_PER_TOKEN = 4


class TokenCache:
    """Token counts of block contents, keyed by content hash, for one encoding.

    What a session keeps per block is its length: every token figure is a sum of
    lengths. A block's token array is needed only where a position inside it is compared
    or shown (the first difference of two blocks, the drift detail's chips), and is then
    tokenized again; the latest ones are kept, up to ``_KEPT_TOKENS`` tokens.

    ``sizes="bytes"`` counts no BPE: a block is ``ceil(len(raw) / 4)`` pseudo-tokens, one
    per 4 bytes of its JSON as sent, and its array is those 4-byte chunks (unsigned, so
    never a marker's id; a first difference is found to 4 bytes). Estimates, for
    measuring what depends on the local sizes (:func:`cacheviz.analysis.prefix_lists`).
    """

    def __init__(
        self, encoding: str, contents: dict[str, Content], *, sizes: str = "tokens"
    ) -> None:
        if sizes not in SIZES:
            msg = f"sizes={sizes!r} is not one of {', '.join(SIZES)}"
            raise ValueError(msg)
        self.encoding = encoding
        self.contents = contents
        self.sizes = sizes
        self._lengths: dict[str, int] = {}
        self._kept: OrderedDict[str, array[int]] = OrderedDict()
        self._kept_tokens = 0
        self._roles: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def ensure(self, hashes: Iterable[str]) -> None:
        """Count every hash not seen yet, in batches of about ``_BATCH_CHARS``.

        A batch's rendered texts exist only while it is counted (no list of ids is
        built: :func:`token_count`); what is kept is each block's length, so peak memory
        follows the batch, not the session.
        """
        contents = self.contents
        missing = [h for h in dict.fromkeys(hashes) if h not in self._lengths]
        for digest in [h for h in missing if self.contents[h].kind == OPAQUE]:
            self._lengths[digest] = 0  # sized later by set_unlogged()
        missing = [h for h in missing if h not in self._lengths]
        if not missing:
            return
        if self.sizes == "bytes":
            for digest in missing:
                self._lengths[digest] = -(-len(contents[digest].raw) // _BYTES_PER_TOKEN)
            return
        batch: list[tuple[str, str | None, str]] = []
        size = 0
        for digest in missing:
            role, text = render_text(contents[digest])
            batch.append((digest, role, text))
            size += len(text)
            if size >= _BATCH_CHARS:
                self._encode(batch)
                batch, size = [], 0
        if batch:
            self._encode(batch)

    def _encode(self, batch: list[tuple[str, str | None, str]]) -> None:
        # counted serially: a thread pool cost more CPU than it saved (docs/performance.md)
        texts = [text for _, _, text in batch]
        roles = {role for _, role, _ in batch if role is not None and role not in self._roles}
        enc = encoding_for_texts(self.encoding, [*texts, *roles])
        for digest, role, text in batch:
            count = token_count(enc, text)
            if role is None:
                self._lengths[digest] = count
            else:
                self._lengths[digest] = count + 2 + len(self._role_ids(role, enc))

    def _role_ids(self, role: str, enc: Encoding) -> list[int]:
        role_ids = self._roles.get(role)
        if role_ids is None:
            role_ids = self._roles[role] = enc.encode_ordinary(role)
        return role_ids

    def set_unlogged(self, digest: str, tokens: int) -> None:
        """Give an unlogged-prefix block its inferred size."""
        self._lengths[digest] = max(0, tokens)
        if self._kept.pop(digest, None) is not None:
            self._kept_tokens = sum(map(len, self._kept.values()))

    def lengths(self) -> dict[str, int]:
        """Token count of every tokenized hash."""
        return dict(self._lengths)

    def length(self, digest: str) -> int:
        """Token count of one block (tokenized now if it was not yet)."""
        size = self._lengths.get(digest)
        if size is None:
            self.ensure([digest])
            size = self._lengths[digest]
        return size

    def __getitem__(self, digest: str) -> array[int]:
        kept = self._kept
        tokens = kept.get(digest)
        if tokens is not None:
            kept.move_to_end(digest)
            return tokens
        if digest not in self._lengths:
            self.ensure([digest])
        tokens = self._tokenized(digest)
        kept[digest] = tokens
        self._kept_tokens += len(tokens)
        while self._kept_tokens > _KEPT_TOKENS and len(kept) > 1:
            _, dropped = kept.popitem(last=False)
            self._kept_tokens -= len(dropped)
        return tokens

    def _tokenized(self, digest: str) -> array[int]:
        """The token array of one counted block (the ids :meth:`ensure` counted)."""
        content = self.contents[digest]
        size = self._lengths[digest]
        if content.kind == OPAQUE:
            if size <= 0:
                return array("i")
            marker = UNLOGGED_ID - int(digest[:7], 16)
            return array("i", [marker]) + array("i", [UNLOGGED]) * (size - 1)
        if self.sizes == "bytes":
            return _chunks(content.raw)
        role, text = render_text(content)
        enc = encoding_for_texts(self.encoding, [text] if role is None else [text, role])
        ids = enc.encode_ordinary(text)
        if role is None:
            return array("i", ids)
        tokens = array("i", [MESSAGE_START, *self._role_ids(role, enc)])
        tokens.extend(ids)
        tokens.append(MESSAGE_END)
        return tokens

    def decode(self, tokens: Iterable[int]) -> list[str]:
        """Return the text of each token (markers as ``<|start|>``/``<|end|>``).

        With ``sizes="bytes"``, a pseudo-token is its 4 bytes (a character they cut is
        shown as U+FFFD).
        """
        enc = None if self.sizes == "bytes" else get_encoding(self.encoding)
        out = []
        for token in tokens:
            if token == MESSAGE_START:
                out.append("<|start|>")
            elif token == MESSAGE_END:
                out.append("<|end|>")
            elif token == UNLOGGED or token <= UNLOGGED_ID:
                out.append("<|unlogged|>")
            elif enc is None:
                chunk = token.to_bytes(_BYTES_PER_TOKEN, "little").rstrip(b"\0")
                out.append(chunk.decode("utf-8", "replace"))
            else:
                out.append(enc.decode_single_token_bytes(token).decode("utf-8", "replace"))
        return out


def _chunks(raw: bytes) -> array[int]:
    """``raw`` as 4-byte pseudo-tokens: unsigned, so never one of the markers' negative ids."""
    chunks = array("I")
    chunks.frombytes(raw + b"\0" * (-len(raw) % _BYTES_PER_TOKEN))
    return array("q", chunks)
