"""dnspython's stub resolver with search=True as a program calls it, for
the resolver matrix (tests/resolvers.rs). Reads "ID KIND NAME" lines on
stdin and prints "ID MILLISECONDS ok VALUE..." or "ID MILLISECONDS err
CLASS DETAIL". Kinds: host (A and AAAA, each resolve(..., search=True):
dnspython 2.3 has no resolve_name), srv, cname (canonical_name: the name
after the CNAMEs), ptr (resolve_address)."""
import sys
import time

import dns.exception
import dns.resolver


def host(res, name):
    """Both families, as getaddrinfo(AF_UNSPEC) would: a family without
    records is no failure unless both have none."""
    found, missing = [], None
    for rdtype in ("A", "AAAA"):
        try:
            found += [r.address for r in res.resolve(name, rdtype, search=True)]
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer) as e:
            missing = e
    if not found and missing is not None:
        raise missing
    return found


def one(res, kind, name):
    if kind == "host":
        return host(res, name)
    if kind == "srv":
        answer = res.resolve(name, "SRV", search=True)
        return [f"{r.priority}:{r.weight}:{r.port}:{r.target}" for r in answer]
    if kind == "cname":
        return [str(res.canonical_name(name))]
    if kind == "ptr":
        return [str(r.target) for r in res.resolve_address(name)]
    return None


def classify(e):
    if isinstance(e, (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer)):
        return f"err notfound {type(e).__name__}"
    if isinstance(e, dns.resolver.NoNameservers):
        return f"err temp NoNameservers: {e}".replace("\n", " ")
    if isinstance(e, dns.exception.Timeout):
        return f"err timeout {type(e).__name__}"
    return f"err error {type(e).__name__}: {e}".replace("\n", " ")


def main():
    res = dns.resolver.Resolver()
    res.lifetime = 15
    for line in sys.stdin:
        f = line.split()
        if len(f) != 3:
            continue
        start = time.monotonic()
        try:
            values = one(res, f[1], f[2])
            if values is None:
                continue
            out = "ok " + " ".join(values)
        except Exception as e:  # every failure is a cell's result
            out = classify(e)
        print(f"{f[0]} {int((time.monotonic() - start) * 1000)} {out}", flush=True)


main()
