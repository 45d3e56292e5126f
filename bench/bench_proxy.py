"""The proxy's added latency and throughput against the fake provider on 127.0.0.1.

Run: ``.venv/bin/python bench/bench_proxy.py [N]`` (N requests per series, default 1,000).

Latency: N sequential requests (one keep-alive client) straight to the fake provider,
then the same N through ``cacheviz proxy``; the added latency is the difference of the
percentiles. Both a JSON Messages call (a 30 kB body) and an SSE stream are measured.
Throughput: N requests from 16 concurrent async clients, direct and through the proxy.
The proxy runs as ``cacheviz proxy`` in its own process, as a user runs it; the fake
provider and the client share this one (they are the baseline of both series).
Writes nothing but the proxy's log (in a temporary folder).
"""

from __future__ import annotations

import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from fake_provider import FakeProvider  # noqa: E402

BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "You are a careful engineer. " * 1000}],
    "messages": [{"role": "user", "content": "Summarize the repository."}],
}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latencies(url: str, n: int, stream: bool) -> list[float]:
    body = json.dumps({**BODY, "stream": stream}).encode()
    out = []
    with httpx2.Client(timeout=30) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            with client.stream("POST", f"{url}/v1/messages", content=body) as answer:
                for _chunk in answer.iter_raw():
                    pass
            out.append((time.perf_counter() - t0) * 1000)
    return out


async def _throughput(url: str, n: int, clients: int) -> float:
    body = json.dumps(BODY).encode()
    queue = list(range(n))

    async def worker(client: httpx2.AsyncClient) -> None:
        while queue:
            queue.pop()
            answer = await client.post(f"{url}/v1/messages", content=body)
            answer.raise_for_status()

    limits = httpx2.Limits(max_connections=clients)
    async with httpx2.AsyncClient(timeout=30, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        return n / (time.perf_counter() - t0)


class ProxyProcess:
    """``cacheviz proxy`` in a subprocess on a free port."""

    def __init__(self, upstream: str, log: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        command = [sys.executable, "-m", "cacheviz", "proxy", "--upstream", upstream]
        command += ["--port", str(self.port), "-o", str(log)]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        self.process.stderr.readline()  # "cacheviz proxy: http://... (Ctrl-C stops)"
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(2)  # Ctrl-C: closes (and fsyncs) the log
        self.process.wait(30)

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines()


def main(n: int = 1000) -> None:
    with FakeProvider() as fake, tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "proxy.jsonl"
        with ProxyProcess(fake.url, log) as proxy:
            latencies(fake.url, 20, False)  # warm up both paths
            latencies(proxy.url, 20, False)
            print(f"{n} sequential requests per series, 1 keep-alive client; ms")
            print(
                f"{'series':<16}{'p50 direct':>11}{'p50 proxy':>11}{'added':>8}"
                f"{'p99 direct':>12}{'p99 proxy':>11}{'added':>8}"
            )
            for label, stream in (("JSON 30 kB", False), ("SSE 30 kB", True)):
                direct = latencies(fake.url, n, stream)
                proxied = latencies(proxy.url, n, stream)
                d50, p50 = statistics.median(direct), statistics.median(proxied)
                d99, p99 = _percentile(direct, 0.99), _percentile(proxied, 0.99)
                print(
                    f"{label:<16}{d50:>11.2f}{p50:>11.2f}{p50 - d50:>8.2f}"
                    f"{d99:>12.2f}{p99:>11.2f}{p99 - d99:>8.2f}"
                )
            direct_rps = asyncio.run(_throughput(fake.url, n, 16))
            proxy_rps = asyncio.run(_throughput(proxy.url, n, 16))
            print(
                f"throughput, 16 concurrent clients: direct {direct_rps:,.0f} req/s, "
                f"through the proxy {proxy_rps:,.0f} req/s ({proxy_rps / direct_rps:.2f}x)"
            )
        lines = [json.loads(line) for line in proxy.lines()]
        print(f"log: {len(lines):,} lines, {log.stat().st_size / 1e6:.1f} MB, all whole JSON")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
