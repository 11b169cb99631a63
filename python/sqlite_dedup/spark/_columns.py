"""Batches of Arrow columns as the extension writes them
(`dedup_rows_arrow`; the format is in src/core/arrow_columns.rs): read
into a pyarrow RecordBatch without a Python value per cell. Nothing here
imports PySpark."""
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
