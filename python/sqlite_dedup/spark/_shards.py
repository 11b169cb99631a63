"""The shards of one job, each once: a file named twice (by any path, a
link, or a byte-identical copy) would make every page of it a duplicate of
itself in the other, and each copy's rows would be removed."""
import hashlib
import os


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def repeated(paths):
    """The first problem with `paths` as one job's shards, as a sentence, or
    None: two paths to one file (same device and inode), or two files of
    the same bytes (compared only where the sizes agree)."""
    seen = {}
    by_size = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue  # (the caller names a missing file)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return (f"shard {path} is the same file as shard {seen[key]}: each shard must be given once "
                    "(its pages would remove each other)")
        seen[key] = path
        by_size.setdefault(st.st_size, []).append(path)
    for same in by_size.values():
        if len(same) > 1:
            digests = {}
            for path in same:
                d = _digest(path)
                if d in digests:
                    return (f"shard {path} is a byte-identical copy of shard {digests[d]}: each shard must "
                            "be given once (its pages would remove each other)")
                digests[d] = path
    return None
