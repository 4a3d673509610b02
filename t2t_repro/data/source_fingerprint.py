"""Fingerprints of the raw files a problem's data was made from, so that data made from files that have changed
since is refused instead of reused.

    recorded = fingerprint(["M/train.en", "M/train.de"], "M")   # {"train.en": {"size", "mtime_ns", "sha256"}, ...}
    change = first_change(recorded, "M")                          # None, or "M/train.en changed (its content differs)"

Each file is recorded by size and modification time, and by the sha256 of its content when it is at most
`HASH_LIMIT_BYTES` (about a second a gigabyte to hash). A file is unchanged when its size and time are the
recorded ones, or, when only its time differs (a copy, a `touch`), when its content hashes the same.
"""

import hashlib
import os

HASH_LIMIT_BYTES = 2 << 30
_BLOCK = 1 << 24


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(paths, root):
    """{path relative to `root`: {"size", "mtime_ns", "sha256" (None past HASH_LIMIT_BYTES)}} of the files."""
    recorded = {}
    for path in paths:
        status = os.stat(path)
        content = _sha256(path) if status.st_size <= HASH_LIMIT_BYTES else None
        recorded[os.path.relpath(path, root)] = {"size": status.st_size, "mtime_ns": status.st_mtime_ns,
                                                 "sha256": content}
    return recorded


def first_change(recorded, root):
    """"<path> <what happened>" for the first recorded file (paths relative to `root`) that is gone or whose
    content is not the recorded one; None when every file is as recorded."""
    for name, was in sorted(recorded.items()):
        path = os.path.join(root, name)
        try:
            status = os.stat(path)
        except OSError:
            return f"{path} is gone"
        if status.st_size != was.get("size"):
            return f"{path} changed (size {status.st_size:,} bytes, was {was.get('size'):,})"
        if status.st_mtime_ns == was.get("mtime_ns"):
            continue
        if not was.get("sha256") or _sha256(path) != was["sha256"]:
            how = "its content differs" if was.get("sha256") else "modified, and too large to compare by content"
            return f"{path} changed ({how})"
    return None


def files_under(directory):
    """The regular files under `directory`, hidden ones and those in hidden directories left out, sorted."""
    found = []
    for parent, subdirectories, names in os.walk(directory):
        subdirectories[:] = [name for name in subdirectories if not name.startswith(".")]
        found += [os.path.join(parent, name) for name in names if not name.startswith(".")]
    return sorted(path for path in found if os.path.isfile(path))
