"""DNS over QUIC clients for tests/transports.rs (dnspython and aioquic,
pinned in tests/run's venv target/tools/doq).

  doq_client.py query PORT CA NAME [HOST]
                                     print the answer's addresses, one a line
                                     (the server's certificate names HOST:
                                     dns.test unless given)
  doq_client.py update PORT CA ZONE  send a DNS UPDATE for ZONE, print the rcode
  doq_client.py flood PORT CA N      open N streams on one connection, send one
                                     byte on each, never finish them; print
                                     "flooding" and hold the connection until killed
"""
import asyncio
import sys

import dns.message
import dns.query
from aioquic.asyncio import connect
from aioquic.quic.configuration import QuicConfiguration


def query(port, ca, name, host="dns.test"):
    q = dns.message.make_query(name, "A")
    r = dns.query.quic(q, "127.0.0.1", port=port, timeout=10, verify=ca, server_hostname=host)
    for rrset in r.answer:
        for rr in rrset:
            print(rr.to_text())


def update(port, ca, zone):
    import dns.rcode
    import dns.update

    u = dns.update.UpdateMessage(zone)
    u.add("x", 300, "A", "192.0.2.1")
    r = dns.query.quic(u, "127.0.0.1", port=port, timeout=10, verify=ca, server_hostname="dns.test")
    print(dns.rcode.to_text(r.rcode()))


async def flood(port, ca, n):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=["doq"], cafile=ca, server_name="dns.test")
    cfg.idle_timeout = 3600
    async with connect("127.0.0.1", port, configuration=cfg) as client:
        quic = client._quic
        for _ in range(n):
            quic.send_stream_data(quic.get_next_available_stream_id(), b"\x00", end_stream=False)
        client.transmit()
        print("flooding", flush=True)
        while True:
            await asyncio.sleep(1)
            client.transmit()


if __name__ == "__main__":
    mode, port, ca, arg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if mode == "query":
        query(port, ca, arg, *sys.argv[5:6])
    elif mode == "update":
        update(port, ca, arg)
    else:
        asyncio.run(flood(port, ca, int(arg)))
