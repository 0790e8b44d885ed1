#!/usr/bin/env python3
"""Writes one synthetic cluster three ways for side-by-side benchmarks:
a kubectl-style JSON dump for clusterdns, an RFC 1035 zone of the same names
for Knot, and dnsperf query files (hits, NODATA, NXDOMAIN).

usage: gen.py OUTDIR NAMESPACES SERVICES_PER_NAMESPACE
"""
import json, os, sys

out, n_ns, per_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out, exist_ok=True)
items, zone = [], ["$ORIGIN cluster.local.", "$TTL 5",
    "@ IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5",
    "@ IN NS ns.dns.cluster.local.", "ns.dns IN A 10.96.0.10"]
hits, nodata, nxdomain = [], [], []
for n in range(n_ns):
    ns = f"ns-{n}"
    items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for s in range(per_ns):
        i = n * per_ns + s
        ip = f"10.{96 + i // 65536}.{(i // 256) % 256}.{i % 256}"
        name = f"svc-{s}"
        items.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                      "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
        zone.append(f"{name}.{ns}.svc IN A {ip}")
        zone.append(f"_http._tcp.{name}.{ns}.svc IN SRV 0 100 80 {name}.{ns}.svc.cluster.local.")
        fq = f"{name}.{ns}.svc.cluster.local"
        hits.append(f"{fq} A")
        nodata.append(f"{fq} AAAA")
        nxdomain.append(f"www.example.com.{ns}.svc.cluster.local A" if s % 2 else f"nosuch-{s}.{ns}.svc.cluster.local A")
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, open(f"{out}/cluster.json", "w"))
open(f"{out}/cluster.local.zone", "w").write("\n".join(zone) + "\n")
for kind, lines in [("hits", hits), ("nodata", nodata), ("nxdomain", nxdomain)]:
    open(f"{out}/{kind}.txt", "w").write("\n".join(lines) + "\n")
print(f"{len(hits)} services in {n_ns} namespaces -> {out}")
