"""Reproducible OCI image archives (`oci-archive:` for skopeo and podman).

No registry and no container engine: each layer is a tar written here with
every entry sorted by path, owned as given, dated SOURCE_DATE_EPOCH and
gzipped without a name or time, so the same inputs give the same digests.
images.py describes the images; `build(spec)` then `write_archive(path)`.

SPEC: {"ref": "clusterdns:0.1.0", "config": {...OCI "config" object...},
       "annotations": {...}, "layers": [LAYER, ...], "created_by": "..."}
LAYER: {"entries": [[PATH, MODE, SOURCE], ...]}   SOURCE: a file to copy,
       "dir" (a directory) or "symlink:TARGET"; missing parents become 0755
       directories; owner root unless "owner": [UID, GID];
   or  {"tar": FILE, "drop": [PREFIX, ...]}   entries of an existing root
       file system tar, normalized the same way (device nodes and the
       PREFIX paths left out; hard links stored as copies).
"""

import gzip
import hashlib
import io
import json
import os
import tarfile
import time

EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
BLOB_DIR = "blobs/sha256"


def canonical(obj):
    """JSON with sorted keys and no spaces: one byte string per value."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def tar_info(path, mode, kind, owner=(0, 0)):
    """A tar header dated SOURCE_DATE_EPOCH with numeric owner only."""
    info = tarfile.TarInfo(path)
    info.type = kind
    info.mode = mode
    info.uid, info.gid = owner
    info.uname = info.gname = ""
    info.mtime = EPOCH
    return info


def entries_from_spec(layer):
    """(path, TarInfo, bytes or None) for a layer listed entry by entry."""
    out = {}
    owner = tuple(layer.get("owner", (0, 0)))
    for path, mode, source in layer["entries"]:
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            out.setdefault(parent, (tar_info(parent, 0o755, tarfile.DIRTYPE), None))
        mode = int(mode, 8)
        if source == "dir":
            out[path] = (tar_info(path, mode, tarfile.DIRTYPE, owner), None)
        elif source.startswith("symlink:"):
            info = tar_info(path, mode, tarfile.SYMTYPE, owner)
            info.linkname = source[len("symlink:"):]
            out[path] = (info, None)
        else:
            with open(source, "rb") as f:
                data = f.read()
            info = tar_info(path, mode, tarfile.REGTYPE, owner)
            info.size = len(data)
            out[path] = (info, data)
    return out


def entries_from_tar(layer):
    """(path, TarInfo, bytes or None) for a root file system tar, normalized."""
    out = {}
    drop = [p.strip("/") for p in layer.get("drop", [])]
    with tarfile.open(layer["tar"]) as src:
        members = src.getmembers()
        by_name = {m.name: m for m in members}
        for m in members:
            path = os.path.normpath(m.name).lstrip("/")
            path = "" if path == "." else path
            if not path or any(path == d or path.startswith(d + "/") for d in drop):
                continue
            if m.ischr() or m.isblk() or m.isfifo():
                continue
            target = by_name.get(m.linkname) if m.islnk() else m
            if target is None:
                raise ValueError(f"{layer['tar']}: {m.name} links to {m.linkname}, which it does not hold")
            kind = tarfile.REGTYPE if m.islnk() else m.type
            info = tar_info(path, m.mode, kind, (m.uid, m.gid))
            info.mtime = min(m.mtime, EPOCH)
            data = None
            if m.issym():
                info.linkname = m.linkname
            elif target.isfile():
                data = src.extractfile(target).read()
                info.size = len(data)
            out[path] = (info, data)
    return out


def layer_tar(entries):
    """The uncompressed layer: entries sorted by path, PAX-free GNU headers."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in sorted(entries):
            info, data = entries[path]
            if info.isdir():
                info.name = path + "/"
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def gz(data):
    """gzip without a file name or time stamp (level 9)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(data)
    return buf.getvalue()


class Layout:
    """An OCI image layout being assembled in memory: blob name -> bytes."""

    def __init__(self):
        self.files = {}

    def blob(self, data, media_type):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.files[f"{BLOB_DIR}/{digest[7:]}"] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    def write_archive(self, path):
        """The layout as a tar, as skopeo's oci-archive transport reads it."""
        with open(path + ".tmp", "wb") as f, tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for d in ("blobs", BLOB_DIR):
                tar.addfile(tar_info(d + "/", 0o755, tarfile.DIRTYPE))
            for name in sorted(self.files):
                data = self.files[name]
                info = tar_info(name, 0o644, tarfile.REGTYPE)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        os.replace(path + ".tmp", path)


def build(spec):
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(EPOCH))
    layout = Layout()
    diff_ids, layers = [], []
    for layer in spec["layers"]:
        raw = layer_tar(entries_from_tar(layer) if "tar" in layer else entries_from_spec(layer))
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
        layers.append(layout.blob(gz(raw), "application/vnd.oci.image.layer.v1.tar+gzip"))
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": spec["config"],
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": created, "created_by": spec["created_by"]}] * len(layers),
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": layout.blob(canonical(config), "application/vnd.oci.image.config.v1+json"),
        "layers": layers,
        "annotations": spec.get("annotations", {}),
    }
    desc = layout.blob(canonical(manifest), manifest["mediaType"])
    desc["annotations"] = {"org.opencontainers.image.ref.name": spec["ref"]}
    layout.files["index.json"] = canonical({"schemaVersion": 2, "manifests": [desc]})
    layout.files["oci-layout"] = canonical({"imageLayoutVersion": "1.0.0"})
    return layout, desc, layers
