"""``cacheviz proxy``: a recording reverse proxy for agents in any language.

Point ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` at it. Every request goes upstream
with its body and headers unchanged (hop-by-hop headers aside); the response, SSE
streams included, is passed back chunk by chunk as it arrives, still compressed if it
was. Provider calls (Messages, Chat Completions, Responses) are written to a cacheviz
request log by the one :class:`~cacheviz.recording._log.LogWriter`. Built on aiohttp (server
and client in one maintained package; see docs/recording.md). Imported lazily: the core
does not need aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import posixpath
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from cacheviz.errors import CacheVizError, PortBusyError
from cacheviz.recording._log import Exchange, LogWriter, Redactor, check_log_path
from cacheviz.redact import redact as redact_secrets

# RFC 9110 §7.6.1 hop-by-hop headers, plus those aiohttp sets itself
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0 picks a free port).

    Raises
    ------
    PortBusyError
        When something already listens there.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            msg = f"port {port} on {host} is busy; stop what uses it or pick another with --port"
            raise PortBusyError(msg) from None
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


CONNECT_TIMEOUT = 10.0  # seconds to reach the upstream
READ_TIMEOUT = 300.0  # seconds of silence from the upstream, or from a caller sending
IDLE_TIMEOUT = 75.0  # seconds a caller's connection may sit without a whole request
_SHUTDOWN = 2.0  # seconds calls in flight get when the proxy stops
_CALLER_LEFT = "the caller disconnected before the end of the response"
_CUT_EARLY = "cut before the upstream answered (the caller left, or the proxy stopped)"


def upstream_path(raw: str) -> str:
    """The path (and query) to send upstream: as sent, unless it climbs with ``..``.

    A path whose decoded segments hold ``.`` or ``..`` (``/%2e%2e/admin``,
    ``/..%2fadmin``) is resolved as a URL would be, never above ``/``, and re-encoded;
    so every request stays under the upstream's path prefix. Any other path is passed
    byte for byte.

    Examples
    --------
    >>> upstream_path("/v1/messages?beta=true")
    '/v1/messages?beta=true'
    >>> upstream_path("/%2e%2e/admin")
    '/admin'
    >>> upstream_path("/v1/..%2f..%2fadmin")
    '/admin'
    """
    path, mark, query = raw.partition("?")
    decoded = unquote(path)
    segments = decoded.replace("\\", "/").split("/")
    if not any(s in (".", "..") for s in segments):
        return raw
    resolved = posixpath.normpath("/" + "/".join(segments)).lstrip("/")
    return "/" + quote(resolved, safe="/:@!$&'()*+,;=-._~") + mark + query


def check_upstream(upstream: str) -> Any:
    """The parts of an upstream URL.

    Raises
    ------
    ValueError
        When it is not an http(s) URL.
    """
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        msg = f"--upstream {upstream!r}: expected an http(s) URL, e.g. https://api.anthropic.com"
        raise ValueError(msg)
    return parts


class Proxy:
    """The proxy application: forward to ``upstream``, record to ``writer``."""

    def __init__(
        self,
        upstream: str,
        writer: LogWriter,
        *,
        redactor: Redactor | None = redact_secrets,
        meta: dict[str, Any] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        parts = check_upstream(upstream)
        self.upstream = upstream
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.hostname or ""
        self.base_path = parts.path.rstrip("/")
        self.base_query = parts.query
        self.writer = writer
        self.redactor = redactor
        self.meta = meta
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._session: Any = None
        self._recording: set[asyncio.Future[Any]] = set()

    def app(self) -> Any:
        """The aiohttp application."""
        from aiohttp import web

        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, _app: Any) -> None:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,  # bytes pass through as sent, compression included
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=self.connect_timeout, sock_read=self.read_timeout
            ),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def _stop(self, _app: Any) -> None:
        if self._session is not None:
            await self._session.close()
        if self._recording:  # lines still being parsed and written
            await asyncio.wait(self._recording, timeout=_SHUTDOWN)
        self.writer.close()

    def _record(self, exchange: Exchange | None, **kwargs: Any) -> None:
        """Finish ``exchange`` (parse, redact, write its line) in a worker thread."""
        if exchange is None:
            return
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, lambda: exchange.finish(**kwargs))
        self._recording.add(future)
        future.add_done_callback(self._recording.discard)

    def url(self, raw_path: str) -> str:
        """The upstream URL of a request path: the prefix, the path, both queries."""
        path, _, query = upstream_path(raw_path).partition("?")
        queries = "&".join(q for q in (self.base_query, query) if q)
        return f"{self.origin}{self.base_path}{path}" + (f"?{queries}" if queries else "")

    async def handle(self, request: Any) -> Any:
        """Forward one request and stream the answer back, recording provider calls.

        The answer is relayed as it arrives; the request body is parsed and redacted
        afterwards, off the request's way (:meth:`_record`).
        """
        import aiohttp
        import yarl
        from aiohttp import web

        try:
            async with asyncio.timeout(self.read_timeout):
                body = await request.read()
        except TimeoutError:
            text = f"cacheviz proxy: the request body did not arrive in {self.read_timeout:g} s"
            return web.Response(status=408, text=text)
        url = self.url(request.raw_path)
        exchange = Exchange.begin(
            [self.writer],
            method=request.method,
            path=urlsplit(url).path,
            host=self.host,
            body=body,
            redactor=self.redactor,
            meta=self.meta,
            defer=True,  # read in _record, after the answer went back
        )
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        try:
            upstream = await self._session.request(
                request.method,
                yarl.URL(url, encoded=True),
                headers=headers,
                data=body,
                allow_redirects=False,
            )
        except asyncio.CancelledError:  # the caller left (or the proxy stops)
            self._record(exchange, error=_CUT_EARLY)
            raise
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            timed_out = isinstance(exc, TimeoutError)
            if timed_out:
                reason = f"upstream timed out (no answer in {self.read_timeout:g} s)"
            else:
                reason = f"upstream unreachable: {type(exc).__name__}: {exc}"
            status = 504 if timed_out else 502
            self._record(exchange, status=status, error=reason)
            error = {"type": "proxy_error", "message": f"cacheviz proxy: {self.upstream}: {reason}"}
            return web.json_response({"type": "error", "error": error}, status=status)
        async with upstream:
            return await self._relay(request, upstream, exchange)

    async def _relay(self, request: Any, upstream: Any, exchange: Exchange | None) -> Any:
        import aiohttp
        from aiohttp import web

        out_headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP]
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for key, value in out_headers:
            response.headers.add(key, value)
        length = upstream.headers.get("Content-Length")
        if length is not None and length.isdigit():
            response.content_length = int(length)
        if exchange is not None:
            exchange.respond(
                upstream.status,
                upstream.headers.get("Content-Type", ""),
                upstream.headers.get("Content-Encoding", ""),
            )
        await response.prepare(request)
        while True:
            try:
                chunk = await upstream.content.readany()
            except asyncio.CancelledError:
                self._record(exchange, error=_CALLER_LEFT)
                raise
            except (TimeoutError, aiohttp.ClientError) as exc:  # upstream cut the stream
                if isinstance(exc, TimeoutError):
                    reason = f"upstream went silent for {self.read_timeout:g} s mid-response"
                else:
                    reason = f"upstream closed mid-response: {type(exc).__name__}: {exc}"
                self._record(exchange, error=reason)
                if request.transport is not None:
                    request.transport.close()  # the caller sees the cut too
                return response
            if not chunk:
                break
            if exchange is not None:
                exchange.feed(chunk)
            try:
                await response.write(chunk)
            except (ConnectionError, asyncio.CancelledError):  # the caller went away
                self._record(exchange, error=_CALLER_LEFT)
                raise
        self._record(exchange)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response


async def serve(
    upstream: str,
    output: str | Path,
    *,
    port: int = 8787,
    host: str = "127.0.0.1",
    redact: bool | Redactor = True,
    meta: dict[str, Any] | None = None,
    ready: Any = None,
    sock: socket.socket | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
    idle_timeout: float | None = None,
) -> None:
    """Run the proxy until cancelled.

    Parameters
    ----------
    upstream
        The provider's base URL, e.g. ``https://api.anthropic.com``.
    output
        The cacheviz request log to append to.
    port, host
        Where to listen (127.0.0.1 unless you say otherwise).
    redact
        As in :func:`cacheviz.record`.
    meta
        ``meta`` keys for every line (e.g. ``{"thread": "main"}``).
    ready
        Called with the bound port once the proxy listens (tests, benchmarks).
    sock
        A socket :func:`bind` already made (``port`` and ``host`` are then ignored).
    connect_timeout, read_timeout
        Seconds to reach the upstream, and of silence allowed from it (an answer that
        stops) or from a caller sending a body; the caller then gets 504 or 408.
    idle_timeout
        Seconds a caller's connection may stay open without a whole request (headers
        sent slowly included); default :data:`IDLE_TIMEOUT`, or ``read_timeout`` when
        that is shorter.

    Raises
    ------
    PortBusyError
        When the port is taken.
    """
    from aiohttp import web

    writer = LogWriter(output)
    redactor = redact_secrets if redact is True else (redact or None)
    proxy = Proxy(  # checks the URL first
        upstream,
        writer,
        redactor=redactor,
        meta=meta,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
    )
    sock = sock if sock is not None else bind(host, port)
    writer.open()
    idle = idle_timeout if idle_timeout is not None else min(IDLE_TIMEOUT, read_timeout)
    runner = web.AppRunner(
        proxy.app(),
        access_log=None,
        handle_signals=False,
        handler_cancellation=True,  # a caller that leaves cancels its upstream request
        keepalive_timeout=idle,  # also bounds a request's headers sent slowly
        shutdown_timeout=_SHUTDOWN,
    )
    await runner.setup()
    try:
        await web.SockSite(runner, sock).start()
        if ready is not None:
            ready(sock.getsockname()[1])
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        sock.close()


def main(
    upstream: str,
    output: str,
    port: int,
    host: str = "127.0.0.1",
    *,
    thread: str | None = None,
    redact: bool = True,
    connect_timeout: float = CONNECT_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
) -> int:
    """The ``cacheviz proxy`` command: run until Ctrl-C; return the exit status."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        print(
            "cacheviz: error: the proxy needs aiohttp: pip install 'cacheviz[record]'",
            file=sys.stderr,
        )
        return 2
    meta = {"thread": thread} if thread else None
    out = Path(output)
    _one_line_warnings()

    def ready(bound: int) -> None:
        print(
            f"cacheviz proxy: http://{host}:{bound} → {upstream}, recording to {out} "
            "(Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )

    for name, value in (("--connect-timeout", connect_timeout), ("--read-timeout", read_timeout)):
        if not value > 0:
            print(f"cacheviz: error: {name} {value}: expected seconds above 0", file=sys.stderr)
            return 2
    try:
        check_upstream(upstream)
        check_log_path(out, create=True)  # recording off from the start is not an option
        sock = bind(host, port)  # before the loop: a busy port fails at once
    except (CacheVizError, ValueError) as exc:
        print(f"cacheviz: error: {exc}", file=sys.stderr)
        return 2
    if not _loopback(host):
        print(
            f"cacheviz proxy: warning: listening on {host}: anyone who can reach this "
            "machine can send calls through it on your key's behalf; use 127.0.0.1 "
            "unless you mean it",
            file=sys.stderr,
        )
    try:
        asyncio.run(
            serve(
                upstream,
                out,
                port=port,
                host=host,
                redact=redact,
                meta=meta,
                ready=ready,
                sock=sock,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
            )
        )
    except KeyboardInterrupt:
        print("cacheviz proxy: stopped", file=sys.stderr)
        return 0
    return 0


def _one_line_warnings() -> None:
    """The command's warnings (a full disk, ...) as one line each on stderr."""
    import warnings

    def show(message: Any, category: Any, *_args: Any, **_kwargs: Any) -> None:
        print(f"cacheviz proxy: warning: {message}", file=sys.stderr, flush=True)

    warnings.showwarning = show


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


__all__ = [
    "PortBusyError",
    "Proxy",
    "bind",
    "check_upstream",
    "main",
    "serve",
    "upstream_path",
]
