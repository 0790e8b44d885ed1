"""DNS over HTTPS over HTTP/3 clients for tests/transports.rs (dnspython's
DoH3 and aioquic's HTTP/3, pinned in tests/run's venv target/tools/doq).
The server is named dns.test, reached at 127.0.0.1.

  doh3_client.py query PORT CA NAME    dnspython, POST then GET: the answer's
                                       addresses, one a line, for each
  doh3_client.py get PORT CA PATH      aioquic: GET PATH, print "STATUS BODYHEX"
  doh3_client.py post PORT CA FILE     aioquic: POST FILE's bytes to /dns-query,
                                       print "STATUS BODYHEX"
  doh3_client.py huge PORT CA N        aioquic: GET /dns-query?dns= and N bytes,
                                       its QPACK written here (pylsqpack encodes
                                       no field over a few KiB); print "STATUS BODYHEX"
"""
import asyncio
import sys

import dns.message
import dns.query
from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamReset


def query(port, ca, name):
    url = f"https://dns.test:{port}/dns-query"
    for post in (True, False):
        q = dns.message.make_query(name, "A")
        r = dns.query.https(
            q, url, timeout=10, bootstrap_address="127.0.0.1", verify=ca,
            http_version=dns.query.HTTPVersion.H3, post=post,
        )
        for rrset in r.answer:
            for rr in rrset:
                print(rr.to_text())


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.done, self.status, self.body = {}, {}, {}

    def quic_event_received(self, event):
        if isinstance(event, StreamReset) and event.stream_id in self.done:
            self.status.setdefault(event.stream_id, "reset")
            self.done.pop(event.stream_id).set_result(None)
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                self.status[e.stream_id] = dict(e.headers).get(b":status", b"?").decode()
            elif isinstance(e, DataReceived):
                self.body.setdefault(e.stream_id, bytearray()).extend(e.data)
            if getattr(e, "stream_ended", False) and e.stream_id in self.done:
                self.done.pop(e.stream_id).set_result(None)

    async def huge(self, n):
        """GET of an N-byte `dns` parameter: one HEADERS frame whose field
        section is literal names and values (QPACK, RFC 9204 4.5.6)."""
        fields = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"dns.test"),
                  (b":path", b"/dns-query?dns=" + b"A" * n)]
        section = bytearray(b"\x00\x00")
        for name, value in fields:
            section += prefixed(0x20, 3, len(name)) + name + prefixed(0x00, 7, len(value)) + value
        frame = varint(0x01) + varint(len(section)) + bytes(section)
        sid = self._quic.get_next_available_stream_id()
        self._quic.send_stream_data(sid, frame, end_stream=True)
        self.done[sid] = asyncio.get_running_loop().create_future()
        self.transmit()
        await asyncio.wait_for(self.done[sid], 10)
        return f"{self.status.get(sid, 'none')} {bytes(self.body.get(sid, b'')).hex()}"

    async def request(self, method, path, body):
        sid = self._quic.get_next_available_stream_id()
        headers = [(b":method", method), (b":scheme", b"https"),
                   (b":authority", b"dns.test"), (b":path", path)]
        if body is not None:
            headers.append((b"content-type", b"application/dns-message"))
        self.h3.send_headers(sid, headers, end_stream=body is None)
        if body is not None:
            self.h3.send_data(sid, body, end_stream=True)
        self.done[sid] = asyncio.get_running_loop().create_future()
        self.transmit()
        await asyncio.wait_for(self.done[sid], 10)
        return f"{self.status.get(sid, 'none')} {bytes(self.body.get(sid, b'')).hex()}"


def prefixed(flags, bits, n):
    """An integer with an N-bit prefix (RFC 7541 5.1) after FLAGS."""
    top = (1 << bits) - 1
    if n < top:
        return bytes([flags | n])
    out, n = bytearray([flags | top]), n - top
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def varint(n):
    """A QUIC variable-length integer (RFC 9000 16)."""
    for size, tag in ((1, 0), (2, 0x40), (4, 0x80), (8, 0xC0)):
        if n < 1 << (8 * size - 2):
            b = bytearray(n.to_bytes(size, "big"))
            b[0] |= tag
            return bytes(b)


async def raw(port, ca, method, path, body):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, cafile=ca, server_name="dns.test")
    async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as client:
        if method == b"HUGE":
            print(await client.huge(int(path)))
        else:
            print(await client.request(method, path, body))


if __name__ == "__main__":
    mode, port, ca, arg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if mode == "query":
        query(port, ca, arg)
    elif mode == "huge":
        asyncio.run(raw(port, ca, b"HUGE", arg, None))
    elif mode == "get":
        asyncio.run(raw(port, ca, b"GET", arg.encode(), None))
    else:
        with open(arg, "rb") as f:
            asyncio.run(raw(port, ca, b"POST", b"/dns-query", f.read()))
