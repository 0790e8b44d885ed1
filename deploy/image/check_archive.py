#!/usr/bin/env python3
"""Asserts what an image archive says about itself (deploy/image/test):
`skopeo inspect` and `skopeo inspect --config` show the user, ports,
labels, entrypoint and command; the layers hold exactly the expected files
(no shell, no file capability on the binary); the SBOM lists every crate in
Cargo.lock and every Debian package in the image.

    check_archive.py cluster|node-local ARCHIVE INSPECT.json CONFIG.json SBOM.json Cargo.lock

Prints one line per check; exits 1 if any failed.
"""

import gzip
import io
import json
import os
import re
import sys
import tarfile
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from images import XTABLES_COMMANDS, XTABLES_LINK  # noqa: E402

CLUSTER_FILES = {
    "clusterdns",
    "etc",
    "etc/group",
    "etc/passwd",
    "etc/ssl",
    "etc/ssl/certs",
    "etc/ssl/certs/ca-certificates.crt",
    "tmp",
}
LABELS = ["source", "version", "revision", "licenses", "created", "title"]
failed = []


def check(ok, what):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failed.append(what)


def layers(archive):
    """{path: TarInfo} of every layer, top layer last (no whiteouts used)."""
    with tarfile.open(archive) as outer:
        index = json.load(outer.extractfile("index.json"))
        blob = lambda d: outer.extractfile("blobs/sha256/" + d.split(":")[1]).read()  # noqa: E731
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        out = []
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob(layer["digest"])))) as t:
                out.append({m.name.rstrip("/"): m for m in t.getmembers()})
    return out


def check_config(kind, inspect, config):
    user = "65532:65532" if kind == "cluster" else "0:0"
    cfg = config["config"]
    check(cfg.get("User") == user, f"user {cfg.get('User')} (want {user})")
    want_ports = {"53/udp", "53/tcp", "8080/tcp", "8181/tcp", "9153/tcp" if kind == "cluster" else "9253/tcp"}
    check(set(cfg.get("ExposedPorts", {})) == want_ports, f"ports {sorted(cfg.get('ExposedPorts', {}))}")
    check(cfg.get("Entrypoint") == ["/clusterdns"], f"entrypoint {cfg.get('Entrypoint')}")
    check(cfg.get("Cmd") == ["-conf", "/etc/coredns/Corefile"], f"command {cfg.get('Cmd')}")
    labels = inspect.get("Labels") or {}
    missing = [k for k in LABELS if not labels.get(f"org.opencontainers.image.{k}")]
    check(not missing, f"OCI labels {', '.join(LABELS)} (missing: {missing or 'none'})")
    check(labels.get("org.opencontainers.image.licenses") == "Apache-2.0", "license label Apache-2.0")
    source = labels.get("org.opencontainers.image.source", "")
    check(source.startswith("https://") and "@" not in source, f"source label an https URL: {source}")
    check(inspect.get("Architecture") == "amd64" and inspect.get("Os") == "linux", "linux/amd64")


def check_files(kind, archive):
    all_layers = layers(archive)
    files = {}
    for layer in all_layers:
        files.update(layer)
    binary = files.get("clusterdns")
    check(binary is not None and binary.mode == 0o755 and binary.uid == 0, "/clusterdns, 0755, owned by root")
    caps = [n for n, m in files.items() if any("xattr" in k for k in m.pax_headers)]
    check(not caps, f"no extended attributes (file capabilities): {caps or 'none'}")
    check(not {"bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash"} & set(files), "no shell")
    if kind == "cluster":
        check(set(files) == CLUSTER_FILES, f"cluster image holds exactly {sorted(CLUSTER_FILES)}: {sorted(files)}")
        check(files["tmp"].mode == 0o1777, "/tmp 1777")
    else:
        for tool in ("usr/sbin/iptables-nft", "usr/sbin/iptables-legacy", "usr/sbin/nft", "usr/sbin/conntrack", "run"):
            check(tool in files, f"node-local image has /{tool}")
        check_commands(files)
        check(not any(n == "dev" or n.startswith("dev/") for n in files), "no device nodes")
    return files


def check_commands(files):
    """The short iptables names link to XTABLES_LINK, in the lockdir
    clusterdns uses by default; both multi-call binaries it can point at
    are in the image."""
    for c in XTABLES_COMMANDS:
        m = files.get(f"usr/sbin/{c}")
        check(m is not None and m.issym() and m.linkname == XTABLES_LINK, f"/usr/sbin/{c} -> {XTABLES_LINK}")
    for multi in ("usr/sbin/xtables-nft-multi", "usr/sbin/xtables-legacy-multi"):
        check(multi in files and files[multi].isfile(), f"node-local image has /{multi}")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = open(os.path.join(root, "src/config/nodelocal.rs")).read()
    lockdir = re.search(r'pub const LOCKDIR: &str = "([^"]+)";', src)
    check(lockdir is not None and f"{lockdir.group(1)}/xtables" == XTABLES_LINK,
          f"{XTABLES_LINK} is in the default lockdir ({lockdir and lockdir.group(1)})")


def check_sbom(sbom, lock_path, files):
    with open(lock_path, "rb") as f:
        lock = {(p["name"], p["version"]) for p in tomllib.load(f)["package"]}
    refs = [r["referenceLocator"] for p in sbom["packages"] for r in p.get("externalRefs", [])]
    crates = {tuple(r[len("pkg:cargo/"):].split("@")) for r in refs if r.startswith("pkg:cargo/")}
    check(crates == lock, f"SBOM lists every crate in Cargo.lock ({len(lock)}; missing {sorted(lock - crates)[:5]})")
    debs = {r[len("pkg:deb/debian/"):].split("@")[0] for r in refs if r.startswith("pkg:deb/debian/")}
    check("ca-certificates" in debs, "SBOM lists ca-certificates")
    status = files.get("var/lib/dpkg/status")
    if status is not None:
        check({"iptables", "nftables", "conntrack", "libc6"} <= debs, f"SBOM lists the Debian packages ({len(debs)})")
    check(sbom.get("spdxVersion") == "SPDX-2.3", "SPDX 2.3")


def main():
    kind, archive, inspect, config, sbom, lock = sys.argv[1:7]
    print(f"{kind}: {archive}")
    load = lambda p: json.load(open(p))  # noqa: E731
    check_config(kind, load(inspect), load(config))
    files = check_files(kind, archive)
    check_sbom(load(sbom), lock, files)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
