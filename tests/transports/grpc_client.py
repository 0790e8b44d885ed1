"""A gRPC client of CoreDNS's DnsService for tests/transports.rs (grpcio
and dnspython, pinned in tests/run's venv target/tools/grpc). The
DnsPacket protobuf (one bytes field, number 1) is written by hand.

  grpc_client.py query PORT CA NAME    print the answer's addresses, one a line
  grpc_client.py update PORT CA ZONE   send a DNS UPDATE for ZONE, print the rcode
  grpc_client.py big PORT CA SIZE      send a DnsPacket of SIZE bytes, print the status
  grpc_client.py other PORT CA METHOD  call another method, print the status
  grpc_client.py file PORT CA FILE     send FILE's bytes as the message, print
                                       the reply's rcode

CA "-": plain HTTP/2 (a grpc:// block without tls); else TLS trusting CA,
the server named dns.test. A failed call prints its status code's name.
"""
import os
import sys

import dns.message
import dns.rcode
import dns.update
import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from dnspacket import decode, encode  # noqa: E402

SERVICE = "/coredns.dns.DnsService/"


def call(port, ca, wire, method="Query"):
    target = f"127.0.0.1:{port}"
    if ca == "-":
        channel = grpc.insecure_channel(target)
    else:
        with open(ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        options = [("grpc.ssl_target_name_override", "dns.test")]
        channel = grpc.secure_channel(target, creds, options=options)
    with channel:
        stub = channel.unary_unary(
            SERVICE + method,
            request_serializer=encode,
            response_deserializer=decode,
        )
        return stub(wire, timeout=10)


def main():
    mode, port, ca, arg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    try:
        if mode == "query":
            r = dns.message.from_wire(call(port, ca, dns.message.make_query(arg, "A").to_wire()))
            for rrset in r.answer:
                for rr in rrset:
                    print(rr.to_text())
        elif mode == "update":
            u = dns.update.UpdateMessage(arg)
            u.add("x", 300, "A", "192.0.2.1")
            print(dns.rcode.to_text(dns.message.from_wire(call(port, ca, u.to_wire())).rcode()))
        elif mode == "file":
            with open(arg, "rb") as f:
                reply = call(port, ca, f.read())
            print(dns.rcode.to_text(dns.message.from_wire(reply, ignore_trailing=True).rcode()))
        elif mode == "big":
            call(port, ca, b"\0" * int(arg))
            print("OK")
        else:
            call(port, ca, dns.message.make_query("x.", "A").to_wire(), method=arg)
            print("OK")
    except grpc.RpcError as e:
        print(e.code().name)


if __name__ == "__main__":
    main()
