#!/usr/bin/env python3
"""Counts the distinct UDP source ports and DNS IDs of the IPv4 datagrams
in a pcap file (as tcpdump -w writes it, on lo or Ethernet), of the last
LAST of them when given.

usage: ports-ids.py NAME FILE.pcap [LAST]
"""
import struct, sys

name, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
magic = struct.unpack("<I", data[:4])[0]
endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
link = struct.unpack(endian + "I", data[20:24])[0]
skip = {1: 14, 113: 16, 276: 20}.get(link, 0)  # Ethernet, Linux cooked v1, v2
last = int(sys.argv[3]) if len(sys.argv) > 3 else 0
seen, off = [], 24
while off + 16 <= len(data):
    incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    ip = pkt[skip:]
    if len(ip) < 20 or ip[0] >> 4 != 4:
        continue
    udp = ip[(ip[0] & 0x0F) * 4:]
    if len(udp) < 10:
        continue
    seen.append((struct.unpack(">H", udp[0:2])[0], struct.unpack(">H", udp[8:10])[0]))
seen = seen[-last:] if last else seen
n, ports, ids = len(seen), {p for p, _ in seen}, {i for _, i in seen}
print(f"{name:10s} {n:4d} queries  {len(ports):4d} distinct ports  {len(ids):4d} distinct IDs")
