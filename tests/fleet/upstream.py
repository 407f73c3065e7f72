#!/usr/bin/python3
"""An upstream for the stream fleet's tests that shares no code with leasehold.

A WebSocket server on Debian's python3-websockets (10.4, its asyncio API),
so that the C++ client is tested against an implementation other than
Beast. It binds 127.0.0.1 on a free port and writes the port to
--port-file once it listens; it exits on SIGTERM or SIGINT.

Paths (N >= 1, 1 when `from` is absent):

  /s/<conn>?from=N        text frames {"seq":N,"conn":..,"sent_at_ms":..,"data":..}
                          with seq N, N+1, ... at --rate messages/s (the
                          protocol of `leasehold upstream-sim`)
  /garbage/<conn>?from=N  the same, with a bad message after each good one, in
                          turn: text that is not JSON, JSON without "seq", a
                          seq that goes backwards, a binary frame. Every good
                          seq still comes exactly once, in order.
  /huge/<conn>?from=N     one 2 MiB text frame first, then the stream
  /drop/<conn>?from=N&after=K
                          K messages, then the TCP connection is aborted (no
                          close frame), so that a client must reconnect and
                          resume
  /flap/<conn>?from=N     the upgrade is accepted and the connection closed at
                          once, every time (a peer that flaps); each one is
                          logged on stderr as "flap <conn> <wall ms>"
  anything else           the upgrade is refused with 404

Run it with /usr/bin/python3 (Debian's, where python3-websockets is).
"""

import argparse
import asyncio
import http
import json
import os
import re
import signal
import ssl
import sys
import time
import urllib.parse

import websockets

HUGE_BYTES = 2 * 1024 * 1024
PATH = re.compile(r"^/(s|garbage|huge|drop|flap)/([A-Za-z0-9._-]{1,128})$")


def parse(path):
    """(kind, conn, from, after) for a served path, or None."""
    url = urllib.parse.urlsplit(path)
    match = PATH.match(url.path)
    if not match:
        return None
    query = urllib.parse.parse_qs(url.query)
    try:
        first = int(query.get("from", ["1"])[0])
        after = int(query.get("after", ["10"])[0])
    except ValueError:
        return None
    if first < 1 or after < 0:
        return None
    return match.group(1), match.group(2), first, after


def message(conn, seq):
    return json.dumps(
        {"seq": seq, "conn": conn, "sent_at_ms": int(time.time() * 1000), "data": "py%06d" % (seq % 1000000)},
        separators=(",", ":"),
    )


def bad_message(conn, seq, turn):
    """The turn-th kind of bad message, sent after good message `seq`."""
    kind = turn % 4
    if kind == 0:
        return "this is not JSON {"
    if kind == 1:
        return json.dumps({"conn": conn, "note": "no seq here"})
    if kind == 2:
        return json.dumps({"seq": max(seq - 3, 0), "conn": conn, "note": "backwards"})
    return b"\x00\x01binary frame\xff"


class Upstream:
    def __init__(self, rate):
        self.period = 1.0 / rate if rate > 0 else 0.0

    async def process_request(self, path, headers):
        if parse(path) is None:
            return http.HTTPStatus.NOT_FOUND, [("Content-Type", "text/plain")], b"no such stream\n"
        return None

    async def serve(self, ws):
        try:
            await self.stream(ws, *parse(ws.path))
        except websockets.ConnectionClosed:
            pass  # the client went, or the server is stopping

    async def stream(self, ws, kind, conn, seq, after):
        loop = asyncio.get_running_loop()
        due = loop.time()
        if kind == "flap":
            print("flap %s %d" % (conn, int(time.time() * 1000)), file=sys.stderr, flush=True)
            await ws.close(1011, "flapping")
            return
        if kind == "huge":
            await ws.send("h" * HUGE_BYTES)
        sent = 0
        while True:
            if kind == "drop" and sent >= after:
                ws.transport.abort()
                return
            await ws.send(message(conn, seq))
            if kind == "garbage":
                await ws.send(bad_message(conn, seq, sent))
            seq += 1
            sent += 1
            if self.period:
                due = max(due + self.period, loop.time())
                await asyncio.sleep(due - loop.time())
            else:
                await asyncio.sleep(0)


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, help="where to write the port once listening")
    parser.add_argument("--rate", type=float, default=50, help="messages/s per stream (0: no pause)")
    parser.add_argument("--tls-cert", help="PEM certificate chain: serve wss://")
    parser.add_argument("--tls-key", help="PEM private key, with --tls-cert")
    args = parser.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.rate < 0:
        parser.error("--rate must be at least 0")
    context = None
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)

    upstream = Upstream(args.rate)
    stop = asyncio.get_running_loop().create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set_result, None)
    async with websockets.serve(
        upstream.serve,
        "127.0.0.1",
        0,
        ssl=context,
        process_request=upstream.process_request,
        compression=None,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        # Written whole, then renamed, so that a reader never sees half of it.
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(args.port_file + ".tmp", args.port_file)
        await stop


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
