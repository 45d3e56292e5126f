"""``cacheviz proxy``: a local reverse proxy that records an agent's calls (docs/recording.md)."""

from __future__ import annotations

from cacheviz.cli._shared import formatter

TYPE_CHECKING = False  # not typing's: importing typing costs start-up (cacheviz --version)
if TYPE_CHECKING:
    import argparse
    from typing import Any


def add_parser(commands: Any) -> None:
    """Add the ``proxy`` command to the ``cacheviz`` parser."""
    proxy = commands.add_parser(
        "proxy",
        formatter_class=formatter,
        help="a local reverse proxy that records every provider call to a log",
    )
    proxy.add_argument("--upstream", required=True, help="e.g. https://api.anthropic.com")
    proxy.add_argument("--port", type=int, default=8787, help="port to listen on (8787)")
    proxy.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    proxy.add_argument(
        "-o", "--output", metavar="FILE", required=True, help="the request log to append to"
    )
    proxy.add_argument("--thread", metavar="NAME", help="write meta.thread NAME on every line")
    proxy.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds to reach the upstream (10)",
    )
    proxy.add_argument(
        "--read-timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds of silence allowed (300)",
    )
    proxy.add_argument(
        "--no-redact", action="store_true", help="keep secrets in bodies (default: redacted)"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``cacheviz proxy`` until it is stopped; return the exit status."""
    from cacheviz.recording._proxy import main as proxy

    return proxy(
        args.upstream,
        args.output,
        args.port,
        args.host,
        thread=args.thread,
        redact=not args.no_redact,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
    )
