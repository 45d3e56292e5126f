"""Record the calls the official ``anthropic`` and ``openai`` Python SDKs send.

``with cacheviz.record("run.jsonl"):`` appends every Messages, Chat Completions and
Responses call sent inside it (sync or async, streaming or not) to a cacheviz request
log (docs/format.md). The hook sits in the HTTP client the SDKs send through (``httpx2``
from anthropic 1.0 and openai 3.0 on, ``httpx`` before; one process may use both):
``Client.send`` / ``AsyncClient.send`` of each one installed are wrapped while a recorder
is active, and the response stream is teed, so the caller reads it as it arrives and
cacheviz keeps only the usage. Headers (the API key) are
never written; secrets in bodies are redacted (``redact=``). See docs/recording.md.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from cacheviz.recording._log import (
    OPENAI_COMPATIBLE,
    Exchange,
    LogWriter,
    Redactor,
    check_log_path,
    route,
)
from cacheviz.redact import redact

F = TypeVar("F", bound=Callable[..., Any])
HTTP_MODULES = ("httpx2", "httpx")  # the SDKs' HTTP clients, newest first: both are hooked

_lock = threading.Lock()
_active: list[Recorder] = []
_originals: dict[tuple[type, str], Any] = {}
_worker: ThreadPoolExecutor | None = None


class Recorder:
    """An active recording: a context manager, a decorator, and the log it wrote.

    Use :func:`record` to make one.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        thread: str | None = None,
        meta: dict[str, Any] | None = None,
        redact: bool | Redactor = True,
    ) -> None:
        if path is not None:  # a folder or a device is a mistake: say so now
            check_log_path(path, folder=False)
        self.writer = LogWriter(path)
        self.meta = {**(meta or {}), **({"thread": thread} if thread else {})} or None
        self.redactor: Redactor | None = _redactor(redact)
        self._depth = 0

    @property
    def error(self) -> str | None:
        """The first error writing the log (a full disk, ...), as warned; ``None`` if none."""
        return self.writer.error

    @property
    def path(self) -> Path | None:
        """The log file, or ``None`` when recording to memory."""
        return self.writer.path

    @property
    def lines(self) -> list[str]:
        """The recorded log lines (memory mode; read the file otherwise)."""
        if self.path is None:
            return list(self.writer.lines)
        if not self.path.exists():
            return []
        return [t for t in self.path.read_text(encoding="utf-8").splitlines() if t.strip()]

    def __len__(self) -> int:
        return self.writer.written

    def __enter__(self) -> Recorder:
        with _lock:
            self._depth += 1
            if self._depth == 1:
                self.writer.open()
                _active.append(self)
                _install()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with _lock:
            self._depth -= 1
            if self._depth:
                return
            _active.remove(self)
            if not _active:
                _uninstall()
        _drain()
        self.writer.close()

    def __call__(self, func: F) -> F:
        """Use the recorder as a decorator (sync or async functions)."""
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                with self:
                    return await func(*args, **kwargs)

            return cast(F, async_wrapper)  # functools.wraps keeps the signature

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return cast(F, wrapper)

    def session(self, **kwargs: Any) -> Any:
        """The recorded calls as a :class:`~cacheviz.model.Session` (kwargs: ``load``'s)."""
        from cacheviz.formats import native

        if self.path is not None:
            return native.read(self.path, **kwargs)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "recording.jsonl"
            path.write_text("".join(f"{t}\n" for t in self.lines), encoding="utf-8")
            return native.read(path, **kwargs)

    def analyze(self, **kwargs: Any) -> Any:
        """The recorded calls analysed: an :class:`~cacheviz.analysis.Analysis`."""
        return self.session().analyze(**kwargs)

    def inspect(self, **options: Any) -> Any:
        """The live inspector: shows the calls recorded so far and follows new ones.

        Options are :func:`cacheviz.inspect`'s (``provider``, ``model``, ``ttl``,
        ``breakpoints``). Needs Jupyter (see :mod:`cacheviz.ui.live`).
        """
        from cacheviz.ui.live import LiveInspector

        return LiveInspector(self, **options)

    def _exchange(self, request: Any) -> Exchange | None:
        try:
            body = request.content
        except Exception:
            return None
        url = request.url
        meta = self.meta
        found = route(request.method, url.path, url.host)
        compatible = found is not None and found[0] is None
        if compatible:  # the openai SDK pointed at a gateway or a local server
            meta = {**(meta or {}), "base_url": base_url(url), "api_family": "openai"}
        exchange = Exchange.begin(
            [self.writer],
            method=request.method,
            path=url.path,
            host=url.host,
            body=body,
            redactor=self.redactor,
            meta=meta,
            defer=True,  # parsed and redacted in the recording worker, not before sending
        )
        if exchange is not None and compatible:
            exchange.provider = OPENAI_COMPATIBLE
        return exchange


def record(
    path: str | Path | None = None,
    *,
    thread: str | None = None,
    meta: dict[str, Any] | None = None,
    redact: bool | Redactor = True,
) -> Recorder:
    """Record the SDK calls made inside a ``with`` block (or a decorated function).

    Parameters
    ----------
    path
        The cacheviz request log to append to; ``None`` records to memory.
    thread
        A thread hint written as ``meta.thread`` on every line.
    meta
        Other ``meta`` keys for every line (e.g. ``{"agent": "planner"}``).
    redact
        ``True`` (default) redacts API keys and tokens in bodies as the report does;
        ``False`` keeps bodies as sent; a function ``str -> str`` redacts your way.

    Returns
    -------
    Recorder
        Its ``analyze()`` gives an :class:`~cacheviz.analysis.Analysis` of the calls.

    Raises
    ------
    RecordingPathError
        When ``path`` is a folder or not a regular file (a device, a FIFO). A log that
        can't be written later (a full disk) warns once and leaves your calls alone;
        ``Recorder.error`` keeps the message.

    Examples
    --------
    >>> with record() as rec:  # doctest: +SKIP
    ...     anthropic.Anthropic().messages.create(model="claude-sonnet-4-5", ...)
    >>> rec.analyze().calls  # doctest: +SKIP
    """
    return Recorder(path, thread=thread, meta=meta, redact=redact)


def base_url(url: Any) -> str:
    """The base URL a client was given: the request URL without the API's route.

    >>> import httpx2
    >>> base_url(httpx2.URL("http://127.0.0.1:8000/v1/chat/completions?x=1"))
    'http://127.0.0.1:8000/v1'
    """
    path = url.path.rstrip("/")
    for suffix in ("/chat/completions", "/responses"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{path}"


def _redactor(option: bool | Redactor) -> Redactor | None:
    if option is True:
        return redact
    if option is False or option is None:
        return None
    return option


def _exchange(request: Any) -> Exchange | _Fanout | None:
    """What records one request for every active recorder (``None``: nothing to record).

    Recorders with the same settings share one exchange (one parse of the stream).
    """
    with _lock:
        recorders = list(_active)
    exchanges: dict[tuple[int, str], Exchange] = {}
    for recorder in recorders:
        key = (id(recorder.redactor), repr(recorder.meta))
        if key in exchanges:
            exchanges[key].writers.append(recorder.writer)
            continue
        exchange = recorder._exchange(request)
        if exchange is None:
            return None  # not a provider call: the same for every recorder
        exchanges[key] = exchange
    found = list(exchanges.values())
    if not found:
        return None
    return found[0] if len(found) == 1 else _Fanout(found)


class _Fanout:
    """Several exchanges fed the same response (nested recorders with other settings)."""

    def __init__(self, exchanges: list[Exchange]) -> None:
        self.exchanges = exchanges

    def respond(self, status: int, content_type: str, content_encoding: str) -> None:
        for exchange in self.exchanges:
            exchange.respond(status, content_type, content_encoding)

    def feed(self, chunk: bytes) -> None:
        for exchange in self.exchanges:
            exchange.feed(chunk)

    def finish(self, *, error: str | None = None) -> None:
        for exchange in self.exchanges:
            exchange.finish(error=error)

    def closed_early(self) -> None:
        for exchange in self.exchanges:
            exchange.closed_early()


def _later(finish: Callable[..., None], **kwargs: Any) -> None:
    """Run an exchange's ``finish`` (parse, redact, write) in the recording worker.

    One worker thread, in order: the caller's thread goes on at once. With no recorder
    active (a stream read after its block) it runs here and now.
    """
    global _worker
    if not _active:
        finish(**kwargs)
        return
    with _lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(1, thread_name_prefix="cacheviz-record")
        worker = _worker
    worker.submit(finish, **kwargs)


def _drain() -> None:
    """Wait until the recording worker has written what it was given."""
    worker = _worker
    if worker is not None:
        worker.submit(lambda: None).result()


def _start(exchange: Exchange | _Fanout, response: Any) -> None:
    headers = response.headers
    exchange.respond(
        response.status_code,
        headers.get("content-type", ""),
        headers.get("content-encoding", ""),
    )


def _sync_tee(base: type) -> type:
    class Tee(base):
        def __init__(self, inner: Any, exchange: Exchange | _Fanout) -> None:
            self.inner, self.exchange = inner, exchange

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self.inner:
                    self.exchange.feed(chunk)
                    yield chunk
            except Exception as exc:
                _later(self.exchange.finish, error=f"{type(exc).__name__}: {exc}")
                raise
            _later(self.exchange.finish)

        def close(self) -> None:
            try:
                self.inner.close()
            finally:
                _later(self.exchange.closed_early)

    return Tee


def _async_tee(base: type) -> type:
    class Tee(base):
        def __init__(self, inner: Any, exchange: Exchange | _Fanout) -> None:
            self.inner, self.exchange = inner, exchange

        async def __aiter__(self) -> Any:
            try:
                async for chunk in self.inner:
                    self.exchange.feed(chunk)
                    yield chunk
            except Exception as exc:
                _later(self.exchange.finish, error=f"{type(exc).__name__}: {exc}")
                raise
            _later(self.exchange.finish)

        async def aclose(self) -> None:
            try:
                await self.inner.aclose()
            finally:
                _later(self.exchange.closed_early)

    return Tee


def _wrap_sync(original: Any, tee: type) -> Any:
    @functools.wraps(original)
    def send(self: Any, request: Any, *, stream: bool = False, **kwargs: Any) -> Any:
        exchange = _exchange(request) if _active else None
        if exchange is None:
            return original(self, request, stream=stream, **kwargs)
        try:
            response = original(self, request, stream=True, **kwargs)
        except Exception as exc:
            _later(exchange.finish, error=f"{type(exc).__name__}: {exc}")
            raise
        _start(exchange, response)
        response.stream = tee(response.stream, exchange)
        if not stream:
            try:
                response.read()
            except BaseException:
                response.close()
                raise
        return response

    return send


def _wrap_async(original: Any, tee: type) -> Any:
    @functools.wraps(original)
    async def send(self: Any, request: Any, *, stream: bool = False, **kwargs: Any) -> Any:
        exchange = _exchange(request) if _active else None
        if exchange is None:
            return await original(self, request, stream=stream, **kwargs)
        try:
            response = await original(self, request, stream=True, **kwargs)
        except Exception as exc:
            _later(exchange.finish, error=f"{type(exc).__name__}: {exc}")
            raise
        _start(exchange, response)
        response.stream = tee(response.stream, exchange)
        if not stream:
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response

    return send


def _install() -> None:
    """Wrap ``send`` of every importable SDK HTTP client (idempotent; caller holds _lock)."""
    for name in HTTP_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        pairs = (
            (module.Client, _wrap_sync, _sync_tee(module.SyncByteStream)),
            (module.AsyncClient, _wrap_async, _async_tee(module.AsyncByteStream)),
        )
        for cls, wrap, tee in pairs:
            if (cls, "send") not in _originals:
                _originals[cls, "send"] = cls.__dict__["send"]
                cls.send = wrap(_originals[cls, "send"], tee)


def _uninstall() -> None:
    """Put the original ``send`` methods back (caller holds _lock)."""
    for (cls, name), original in _originals.items():
        setattr(cls, name, original)
    _originals.clear()


__all__ = ["Recorder", "record"]
