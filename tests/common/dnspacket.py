"""CoreDNS's DnsPacket protobuf (`message DnsPacket { bytes msg = 1; }`),
written and read by hand for the gRPC test scripts (tests/grpc_forward/
upstream.py and tests/transports/grpc_client.py): field 1, wire type 2,
a varint length, the DNS message."""


def encode(msg):
    out, n = bytearray([0x0A]), len(msg)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + msg


def decode(packet):
    assert packet[0] == 0x0A, packet[:8]
    n, shift, i = 0, 0, 1
    while True:
        c = packet[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return packet[i : i + n]
