"""A real Chroma server behind a token-checking, TLS-terminating gate, as a home would run it.

Chroma 1.x's own server (`chroma run`) has no authentication and no TLS: deployments put a
reverse proxy in front that terminates TLS and checks a token. This script is that deployment on
127.0.0.1, in one process tree: it starts `chroma run` on a free port, then two gates in front of
it, one plain HTTP and one HTTPS (the certificate and key given), both refusing any request
without ``Authorization: Bearer <token>`` or ``X-Chroma-Token: <token>`` (401), and forwarding
the rest unchanged. When all three listen, it prints one JSON line
``{"chroma": port, "plain": port, "tls": port}``; it stops (and stops Chroma) when terminated or
when its standard input closes.

    python tests/chroma_gate.py DATA_DIR TOKEN CERT KEY
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import ssl
import sys
from pathlib import Path

from aiohttp import ClientSession, web

HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "authorization"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _wait_for(port: int) -> None:
    for _ in range(300):
        try:
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError("chroma did not start")


def _gate(upstream: str, token: str, session: ClientSession) -> web.Application:
    async def forward(request: web.Request) -> web.StreamResponse:
        given = request.headers.get("X-Chroma-Token") or request.headers.get(
            "Authorization", ""
        ).removeprefix("Bearer ")
        if given != token:
            return web.json_response({"error": "Unauthorized"}, status=401)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        async with session.request(
            request.method,
            upstream + request.rel_url.path_qs,
            headers=headers,
            data=await request.read(),
        ) as answer:
            body = await answer.read()
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_HEADERS}
            return web.Response(status=answer.status, body=body, headers=kept)

    app = web.Application(client_max_size=1 << 30)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


async def main(data: Path, token: str, cert: str, key: str) -> None:
    """Chroma and its two gates until a signal or the end of standard input."""
    chroma_port = _free_port()
    chroma_cli = Path(sys.executable).with_name("chroma")
    chroma = await asyncio.create_subprocess_exec(
        str(chroma_cli), "run", "--path", str(data), "--host", "127.0.0.1",
        "--port", str(chroma_port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    runners: list[web.AppRunner] = []
    try:
        await _wait_for(chroma_port)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        ports = {"chroma": chroma_port}
        async with ClientSession() as session:
            for name, tls in (("plain", None), ("tls", context)):
                runner = web.AppRunner(_gate(f"http://127.0.0.1:{chroma_port}", token, session))
                await runner.setup()
                site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
                await site.start()
                runners.append(runner)
                ports[name] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            print(json.dumps(ports), flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            loop.add_reader(sys.stdin.fileno(), stop.set)  # EOF: the test process went away
            await stop.wait()
            for runner in runners:
                await runner.cleanup()
    finally:
        if chroma.returncode is None:
            chroma.terminate()
            await chroma.wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]))
