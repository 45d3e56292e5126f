"""``cacheviz proxy``: a recording reverse proxy for agents in any language.

Point ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` at it. Every request goes upstream
with its body and headers unchanged (hop-by-hop headers aside); the response, SSE
streams included, is passed back chunk by chunk as it arrives, still compressed if it
was. Provider calls (Messages, Chat Completions, Responses) are written to a cacheviz
request log by the one :class:`~cacheviz.recording.log.LogWriter`. Built on aiohttp (server
and client in one maintained package; see docs/recording.md). Imported lazily: the core
does not need aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cacheviz.errors import PortBusyError
from cacheviz.recording.log import Exchange, LogWriter, Redactor
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
    ) -> None:
        parts = check_upstream(upstream)
        self.upstream = upstream.rstrip("/")
        self.host = parts.hostname or ""
        self.base_path = parts.path.rstrip("/")
        self.writer = writer
        self.redactor = redactor
        self.meta = meta
        self._session: Any = None

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
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def _stop(self, _app: Any) -> None:
        if self._session is not None:
            await self._session.close()
        self.writer.close()

    async def handle(self, request: Any) -> Any:
        """Forward one request and stream the answer back, recording provider calls."""
        import aiohttp
        from aiohttp import web

        body = await request.read()
        path = self.base_path + request.rel_url.path
        # parsing and redacting the body (new text: ~0.5 ms a kB) runs in a worker
        # thread while the request goes upstream, not before it
        begin = asyncio.get_running_loop().run_in_executor(
            None,
            functools.partial(
                Exchange.begin,
                [self.writer],
                method=request.method,
                path=path,
                host=self.host,
                body=body,
                redactor=self.redactor,
                meta=self.meta,
            ),
        )
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        url = self.upstream + request.rel_url.path_qs
        try:
            upstream = await self._session.request(
                request.method, url, headers=headers, data=body, allow_redirects=False
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            exchange = await begin
            reason = f"{type(exc).__name__}: {exc}"
            if exchange is not None:
                exchange.finish(status=502, error=f"upstream unreachable: {reason}")
            error = {"type": "proxy_error", "message": f"cacheviz proxy: {self.upstream}: {reason}"}
            return web.json_response({"type": "error", "error": error}, status=502)
        exchange = await begin
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
            except (TimeoutError, aiohttp.ClientError) as exc:  # upstream cut the stream
                if exchange is not None:
                    reason = f"{type(exc).__name__}: {exc}"
                    exchange.finish(error=f"upstream closed mid-response: {reason}")
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
                if exchange is not None:
                    exchange.finish(error="the caller disconnected before the end of the response")
                raise
        if exchange is not None:
            exchange.finish()
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

    Raises
    ------
    PortBusyError
        When the port is taken.
    """
    from aiohttp import web

    writer = LogWriter(output)
    redactor = redact_secrets if redact is True else (redact or None)
    proxy = Proxy(upstream, writer, redactor=redactor, meta=meta)  # checks the URL first
    sock = sock if sock is not None else bind(host, port)
    writer.open()
    runner = web.AppRunner(proxy.app(), access_log=None, handle_signals=False)
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

    def ready(bound: int) -> None:
        print(
            f"cacheviz proxy: http://{host}:{bound} → {upstream}, recording to {out} "
            "(Ctrl-C stops)",
            file=sys.stderr,
            flush=True,
        )

    try:
        check_upstream(upstream)
        sock = bind(host, port)  # before the loop: a busy port fails at once
    except (PortBusyError, ValueError) as exc:
        print(f"cacheviz: error: {exc}", file=sys.stderr)
        return 2
    options = {"redact": redact, "meta": meta, "ready": ready, "sock": sock}
    try:
        asyncio.run(serve(upstream, out, port=port, host=host, **options))
    except KeyboardInterrupt:
        return 0
    return 0


__all__ = ["PortBusyError", "Proxy", "bind", "check_upstream", "main", "serve"]
