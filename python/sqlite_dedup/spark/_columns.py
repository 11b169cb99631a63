"""Batches of Arrow columns as the extension writes them
(`dedup_rows_arrow`; the format is in src/core/arrow_columns.rs): read
into a pyarrow RecordBatch, and a RecordBatch written for the extension to
read (`dedup_phase1_arrow`), without a Python value per cell. Nothing
here imports PySpark."""
import struct

MAGIC = b"DDARROW1"

#: Each kind's Arrow type (pyarrow's factory name) and buffer count.
KINDS = {1: ("int64", 1), 2: ("int32", 1), 3: ("string", 2), 4: ("binary", 2)}


def record_batch(blob):
    """The RecordBatch in `blob` (bytes); ValueError when it is not one."""
    import pyarrow as pa

    view = memoryview(blob)
    if bytes(view[:8]) != MAGIC:
        raise ValueError("sqlite-dedup: not a batch of Arrow columns (no DDARROW1 header)")
    rows, ncols = struct.unpack_from("<QQ", view, 8)
    at = 24
    whole = pa.py_buffer(blob)

    def take():
        nonlocal at
        (size,) = struct.unpack_from("<Q", view, at)
        start = at + 8
        at = start + size + (-size % 8)
        if at > len(view):
            raise ValueError("sqlite-dedup: a batch of Arrow columns ends early")
        return start, size

    names, arrays = [], []
    for _ in range(ncols):
        start, size = take()
        names.append(bytes(view[start:start + size]).decode())
        (kind,) = struct.unpack_from("<Q", view, at)
        at += 8
        if kind not in KINDS:
            raise ValueError(f"sqlite-dedup: column {names[-1]} has an unknown kind {kind}")
        type_name, count = KINDS[kind]
        buffers = [whole.slice(*take()) for _ in range(1 + count)]
        arrays.append(pa.Array.from_buffers(getattr(pa, type_name)(), rows, buffers))
    return pa.RecordBatch.from_arrays(arrays, names=names)


#: The Arrow types `batch_bytes` writes, by their kind.
WRITABLE = {"int64": 1, "int32": 2, "string": 3, "large_string": 3, "binary": 4, "large_binary": 4, "null": 3}


def writable(arrow_type):
    """Whether `batch_bytes` writes a column of this Arrow type."""
    return str(arrow_type) in WRITABLE


def batch_bytes(columns):
    """`columns` ((name, pyarrow Array) pairs, of one length, each of a
    `writable` type) as one batch in the extension's format (a bytearray):
    each buffer copied once, no Python value per cell."""
    import pyarrow as pa

    rows = len(columns[0][1]) if columns else 0
    pieces = []  # (header bytes, buffer or None)

    def put(buf):
        pieces.append(memoryview(b"" if buf is None else buf))

    for name, array in columns:
        kind = WRITABLE[str(array.type)]
        if str(array.type) == "null":
            array = pa.array([None] * len(array), pa.string())
        elif str(array.type) in ("large_string", "large_binary"):
            array = array.cast(pa.string() if kind == 3 else pa.binary())
        if array.offset:
            # (A slice: its buffers start before it; a copy starts at 0.)
            array = pa.concat_arrays([array])
        buffers = array.buffers()
        put(name.encode())
        pieces.append(struct.pack("<Q", kind))
        put(buffers[0])  # validity (none: every row valid)
        put(buffers[1])
        if kind in (3, 4):
            put(buffers[2])
    size = 24 + sum(len(p) if isinstance(p, bytes) else 8 + len(p) + (-len(p) % 8) for p in pieces)
    out = bytearray(size)
    out[:24] = MAGIC + struct.pack("<QQ", rows, len(columns))
    at = 24
    for p in pieces:
        if isinstance(p, bytes):
            out[at:at + 8] = p
            at += 8
            continue
        n = len(p)
        out[at:at + 8] = struct.pack("<Q", n)
        out[at + 8:at + 8 + n] = p.cast("B") if p.format != "B" else p
        at += 8 + n + (-n % 8)
    return out
