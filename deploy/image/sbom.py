#!/usr/bin/env python3
"""Writes an image's SBOM as SPDX 2.3 JSON: every crate `cargo metadata`
resolves (the whole Cargo.lock) and the Debian packages in the image.

    sbom.py OUT.spdx.json --name IMAGE --version V --revision R \
        --cargo-metadata METADATA.json [--deb-status STATUS-FILE]

--deb-status reads a dpkg status file (Package, Version, Architecture,
Source paragraphs). Dated SOURCE_DATE_EPOCH and sorted, so one commit gives
one byte-identical document.
"""

import argparse
import json
import os
import re
import sys
import time
import urllib.parse

NOASSERTION = "NOASSERTION"


def spdx_id(kind, index, name):
    return f"SPDXRef-{kind}-{index}-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)


def crates(metadata):
    """(name, version, license, source) of every package the lock file holds."""
    out = []
    for p in metadata["packages"]:
        source = p.get("source") or "workspace"
        out.append((p["name"], p["version"], p.get("license") or NOASSERTION, source))
    return sorted(out)


def debs(status_text):
    """(name, version, arch, source) per paragraph of a dpkg status file."""
    out = []
    for para in status_text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in para.splitlines() if ": " in line and not line.startswith(" ")
        )
        if "Package" in fields:
            source = fields.get("Source", fields["Package"]).split(" ")[0]
            out.append((fields["Package"], fields["Version"], fields.get("Architecture", "all"), source))
    return sorted(out)


def crate_package(i, name, version, license, source):
    pkg = {
        "SPDXID": spdx_id("cargo", i, name),
        "name": name,
        "versionInfo": version,
        "downloadLocation": f"https://crates.io/crates/{name}/{version}" if source.startswith("registry+") else NOASSERTION,
        "filesAnalyzed": False,
        "licenseConcluded": NOASSERTION,
        "licenseDeclared": NOASSERTION if license == NOASSERTION else license.replace("/", " OR "),
        "copyrightText": NOASSERTION,
        "externalRefs": [
            {
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": f"pkg:cargo/{name}@{version}",
            }
        ],
    }
    return pkg


def deb_package(i, name, version, arch, source):
    quoted = urllib.parse.quote(version, safe="")
    return {
        "SPDXID": spdx_id("deb", i, name),
        "name": name,
        "versionInfo": version,
        "sourceInfo": f"Debian source package {source}",
        "downloadLocation": NOASSERTION,
        "filesAnalyzed": False,
        "licenseConcluded": NOASSERTION,
        "licenseDeclared": NOASSERTION,
        "copyrightText": NOASSERTION,
        "externalRefs": [
            {
                "referenceCategory": "PACKAGE-MANAGER",
                "referenceType": "purl",
                "referenceLocator": f"pkg:deb/debian/{name}@{quoted}?arch={arch}&distro=debian-12",
            }
        ],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--name", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--revision", required=True)
    ap.add_argument("--cargo-metadata", required=True)
    ap.add_argument("--deb-status")
    args = ap.parse_args()
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    with open(args.cargo_metadata) as f:
        metadata = json.load(f)
    packages = [crate_package(i, *c) for i, c in enumerate(crates(metadata))]
    if args.deb_status:
        with open(args.deb_status) as f:
            packages += [deb_package(i, *d) for i, d in enumerate(debs(f.read()))]
    root = {
        "SPDXID": "SPDXRef-image",
        "name": args.name,
        "versionInfo": args.version,
        "downloadLocation": NOASSERTION,
        "filesAnalyzed": False,
        "licenseConcluded": NOASSERTION,
        "licenseDeclared": "Apache-2.0",
        "copyrightText": NOASSERTION,
    }
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{args.name}-{args.version}",
        "documentNamespace": f"https://spdx.org/spdxdocs/{args.name}-{args.version}-{args.revision}",
        "creationInfo": {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)),
            "creators": ["Tool: clusterdns-deploy-image-sbom"],
        },
        "documentDescribes": ["SPDXRef-image"],
        "packages": [root] + packages,
        "relationships": [
            {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": "SPDXRef-image"}
        ]
        + [
            {"spdxElementId": "SPDXRef-image", "relationshipType": "CONTAINS", "relatedSpdxElement": p["SPDXID"]}
            for p in packages
        ],
    }
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{args.out}: {len(packages)} packages")


if __name__ == "__main__":
    sys.exit(main())
