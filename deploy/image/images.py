#!/usr/bin/env python3
"""The two images, file by file, as deploy/Dockerfile lays them out; written
by oci.py as reproducible OCI archives (deploy/image/build runs this).

    images.py cluster    ARCHIVE --staging DIR --version V --revision R --source URL
    images.py node-local ARCHIVE --staging DIR --version V --revision R --source URL --rootfs TAR

DIR holds `clusterdns` (stripped), `ca-certificates.crt`; the cluster
image adds deploy/image/passwd and group. The node-local image is the
Debian root file system TAR (mmdebstrap) with the same files on top.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENTRYPOINT = ["/clusterdns"]
CMD = ["-conf", "/etc/coredns/Corefile"]
# Left out of the Debian root file system: device nodes come from the
# runtime; apt's and dpkg's state (but dpkg's status file, which scanners
# read), logs and the build host's resolv.conf/hostname do not belong.
ROOTFS_DROP = [
    "dev",
    "etc/apt",
    "etc/dpkg",
    "etc/fstab",
    "etc/hostname",
    "etc/resolv.conf",
    "var/cache",
    "var/lib/apt",
    "var/lib/dpkg/alternatives",
    "var/lib/dpkg/arch",
    "var/lib/dpkg/info",
    "var/lib/dpkg/triggers",
    "var/lib/dpkg/updates",
    "var/log",
    "usr/share/man",
    "usr/share/lintian",
]


# `iptables`, `ip6tables` and their -save/-restore: Debian's alternatives
# links, which the extracted root file system lacks, made here through one
# link in the node-local `lockdir` (src/config/nodelocal.rs LOCKDIR, a
# hostPath in the DaemonSet) that clusterdns points at the multi-call binary
# of the backend it chose (src/nodelocal/commands.rs), as iptables-wrapper
# does in Kubernetes' images.
XTABLES_LINK = "/run/clusterdns/nodelocal/xtables"
XTABLES_COMMANDS = [f"{v}tables{s}" for v in ("ip", "ip6") for s in ("", "-save", "-restore")]


def labels(args, title, description):
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(oci.EPOCH))
    return {
        "org.opencontainers.image.title": title,
        "org.opencontainers.image.description": description,
        "org.opencontainers.image.version": args.version,
        "org.opencontainers.image.revision": args.revision,
        "org.opencontainers.image.source": args.source,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.created": created,
    }


def ports(*numbers):
    out = {"53/udp": {}, "53/tcp": {}}
    out.update({f"{n}/tcp": {} for n in numbers})
    return out


def app_entries(args):
    s = args.staging
    return [
        ["clusterdns", "0755", f"{s}/clusterdns"],
        ["etc/ssl/certs/ca-certificates.crt", "0644", f"{s}/ca-certificates.crt"],
    ]


def cluster(args):
    lab = labels(args, "clusterdns", "Kubernetes cluster DNS server, a drop-in replacement for CoreDNS")
    files = app_entries(args) + [
        ["etc/passwd", "0644", f"{HERE}/passwd"],
        ["etc/group", "0644", f"{HERE}/group"],
        ["tmp", "1777", "dir"],
    ]
    return {
        "ref": f"clusterdns:{args.version}",
        "created_by": "deploy/image/build (cluster image, FROM scratch)",
        "layers": [{"entries": files}],
        "annotations": lab,
        "config": {
            "User": "65532:65532",
            "Env": [PATH, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "ExposedPorts": ports(9153, 8080, 8181),
            "Entrypoint": ENTRYPOINT,
            "Cmd": CMD,
            "WorkingDir": "/",
            "Labels": lab,
        },
    }


def node_local(args):
    lab = labels(args, "clusterdns-node-local", "clusterdns as a node-local DNS cache, with iptables, nftables and conntrack")
    files = app_entries(args) + [["run", "0755", "dir"]]
    files += [[f"usr/sbin/{c}", "0777", f"symlink:{XTABLES_LINK}"] for c in XTABLES_COMMANDS]
    return {
        "ref": f"clusterdns-node-local:{args.version}",
        "created_by": "deploy/image/build (node-local image: Debian 12 iptables, nftables, conntrack)",
        "layers": [{"tar": args.rootfs, "drop": ROOTFS_DROP}, {"entries": files}],
        "annotations": lab,
        "config": {
            "User": "0:0",
            "Env": [PATH, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
            "ExposedPorts": ports(9253, 8080, 8181),
            "Entrypoint": ENTRYPOINT,
            "Cmd": CMD,
            "WorkingDir": "/",
            "Labels": lab,
        },
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image", choices=["cluster", "node-local"])
    ap.add_argument("archive")
    ap.add_argument("--staging", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--revision", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--rootfs")
    args = ap.parse_args()
    if args.image == "node-local" and not args.rootfs:
        ap.error("node-local needs --rootfs")
    spec = cluster(args) if args.image == "cluster" else node_local(args)
    layout, desc, layers = oci.build(spec)
    layout.write_archive(args.archive)
    size = sum(layer["size"] for layer in layers)
    print(f"{args.archive}: {spec['ref']} {desc['digest']} ({len(layers)} layers, {size} bytes compressed)")


if __name__ == "__main__":
    sys.exit(main())
