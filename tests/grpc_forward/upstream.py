"""An independent upstream for tests/grpc_forward.rs: CoreDNS's DnsService
served by grpcio (Google's gRPC) with answers made by dnspython, so the
`grpc` directive's wire format is checked against an implementation that
is not ours. Pinned in tests/run's venv target/tools/grpc.

  upstream.py COUNT_FILE [SOCKET]

Listens on 127.0.0.1 (plain HTTP/2), or on the unix socket SOCKET when
given, prints its port (0 on a socket), then writes the
number of calls served to COUNT_FILE after each. Every A question is
answered 192.0.2.7 (TTL 60); a name under `missing.` ends the call with
NOT_FOUND, which CoreDNS's grpc plugin reads as NXDOMAIN.
"""
import os
import sys
from concurrent import futures

import dns.message
import dns.rdatatype
import dns.rrset
import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from dnspacket import decode, encode  # noqa: E402

COUNT = sys.argv[1]
calls = 0


def query(wire, context):
    global calls
    calls += 1
    with open(COUNT, "w") as f:
        f.write(str(calls))
    q = dns.message.from_wire(wire)
    question = q.question[0]
    if question.name.to_text().startswith("missing."):
        context.abort(grpc.StatusCode.NOT_FOUND, "no such name")
    r = dns.message.make_response(q)
    if question.rdtype == dns.rdatatype.A:
        r.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A", "192.0.2.7"))
    return r.to_wire()


def main():
    method = grpc.unary_unary_rpc_method_handler(query, request_deserializer=decode, response_serializer=encode)
    handler = grpc.method_handlers_generic_handler("coredns.dns.DnsService", {"Query": method})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    at = "unix:" + sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1:0"
    port = server.add_insecure_port(at)
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


main()
