#!/usr/bin/env python3
"""The podman flags that give a container the security context a manifest
gives it, so deploy/image/test runs the images as the manifests do (not as
the test thinks they do). One flag per line.

    podman_flags.py MANIFEST.yaml CONTAINER-NAME

User and group, read-only root (without podman's extra tmpfs mounts, as the
kubelet mounts none), no-new-privileges for allowPrivilegeEscalation:
false, capabilities, pod sysctls. Any other security setting is an error
naming it, so a new one cannot go untested.
"""

import sys

import yaml

POD_KEYS = {"runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile", "sysctls"}
CONTAINER_KEYS = {"runAsNonRoot", "runAsUser", "runAsGroup", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities"}


def find(manifest, name):
    """(pod spec, container) of the workload holding container `name`."""
    with open(manifest) as f:
        for doc in yaml.safe_load_all(f):
            spec = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
            for c in spec.get("containers", []):
                if c.get("name") == name:
                    return spec, c
    sys.exit(f"{manifest}: no container named {name}")


def flags(pod, container):
    psc = pod.get("securityContext", {})
    csc = container.get("securityContext", {})
    unknown = sorted((set(psc) - POD_KEYS) | (set(csc) - CONTAINER_KEYS))
    if unknown:
        sys.exit(f"security settings deploy/image/test does not apply yet: {', '.join(unknown)}")
    seccomp = psc.get("seccompProfile", {}).get("type", "RuntimeDefault")
    if seccomp != "RuntimeDefault":
        sys.exit(f"seccompProfile {seccomp}: only RuntimeDefault (podman's default profile) is applied")
    out = []
    user = csc.get("runAsUser", psc.get("runAsUser"))
    group = csc.get("runAsGroup", psc.get("runAsGroup"))
    if user is not None:
        out.append(f"--user={user}:{group if group is not None else user}")
    if csc.get("readOnlyRootFilesystem"):
        out += ["--read-only", "--read-only-tmpfs=false"]
    if csc.get("allowPrivilegeEscalation") is False:
        out += ["--security-opt", "no-new-privileges"]
    caps = csc.get("capabilities", {})
    out += [f"--cap-drop={c}" for c in caps.get("drop", [])]
    out += [f"--cap-add={c}" for c in caps.get("add", [])]
    out += [f"--sysctl={s['name']}={s['value']}" for s in psc.get("sysctls", [])]
    return out


def main():
    manifest, name = sys.argv[1:3]
    print("\n".join(flags(*find(manifest, name))))


if __name__ == "__main__":
    main()
