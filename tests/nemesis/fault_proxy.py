"""TCP proxies between each process and the store, with faults on demand.

The nemesis gives every process it starts on DynamoDB a proxy of its own,
so that a fault can hit one process (a partition) or all of them. A proxy
listens on a free loopback port and forwards each connection to the store's
port, byte for byte; its mode decides what happens meanwhile:

  ok          forward
  latency MS  forward each chunk MS milliseconds late (order kept)
  drop        close every connection at once, and each new one as it comes
  reset       the same with a TCP reset (SO_LINGER 0): the client sees ECONNRESET
  blackhole   accept and read, forward nothing and answer nothing: a
              partition. Connections that saw the black hole are closed when
              it ends (what they carried is lost, as across a real one).

All proxies run on one asyncio loop in a thread of their own; set_mode() may
be called from any thread.
"""

import asyncio
import socket
import struct
import threading

MODES = ("ok", "latency", "drop", "reset", "blackhole")


class _Conn:
    def __init__(self, client, upstream):
        self.client, self.upstream = client, upstream  # StreamWriters
        self.poisoned = False  # saw a black hole: closed when it ends

    def close(self, reset=False):
        for w in (self.client, self.upstream):
            if w is None:
                continue
            if reset:
                sock = w.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                    except OSError:
                        pass
            w.transport.abort() if reset else w.close()


class Proxy:
    def __init__(self, hub, name, upstream_port):
        self.hub, self.name, self.upstream_port = hub, name, upstream_port
        self.mode, self.latency_ms = "ok", 0
        self.conns = set()
        self.port = None
        self._server = None

    async def _start(self):
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader, writer):
        if self.mode in ("drop", "reset"):
            _Conn(writer, None).close(reset=self.mode == "reset")
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        conn = _Conn(writer, up_writer)
        conn.poisoned = self.mode == "blackhole"
        self.conns.add(conn)
        try:
            await asyncio.gather(self._pipe(reader, up_writer, conn),
                                 self._pipe(up_reader, writer, conn))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.conns.discard(conn)
            conn.close()

    async def _pipe(self, reader, writer, conn):
        while True:
            data = await reader.read(65536)
            if not data:
                writer.close()
                return
            if self.mode == "blackhole" or conn.poisoned:
                conn.poisoned = True
                continue
            if self.mode == "latency" and self.latency_ms > 0:
                await asyncio.sleep(self.latency_ms / 1000)
            writer.write(data)
            await writer.drain()

    def _set(self, mode, latency_ms):
        was = self.mode
        self.mode, self.latency_ms = mode, latency_ms
        if mode in ("drop", "reset"):
            for c in list(self.conns):
                c.close(reset=mode == "reset")
            self.conns.clear()
        elif mode == "blackhole":
            for c in self.conns:
                c.poisoned = True
        if was == "blackhole" and mode != "blackhole":
            for c in [c for c in self.conns if c.poisoned]:
                c.close()
                self.conns.discard(c)

    def set_mode(self, mode, latency_ms=0):
        if mode not in MODES:
            raise ValueError("unknown proxy mode " + mode)
        done = threading.Event()

        def apply():
            self._set(mode, latency_ms)
            done.set()

        self.hub.loop.call_soon_threadsafe(apply)
        done.wait(5)


class ProxyHub:
    """The loop all proxies share."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxies", daemon=True)
        self.thread.start()

    def proxy(self, name, upstream_port):
        p = Proxy(self, name, upstream_port)
        asyncio.run_coroutine_threadsafe(p._start(), self.loop).result(10)
        return p

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
