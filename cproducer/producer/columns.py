"""Turn what users pass to ``send_many`` into columns the C loop reads (no copy of Arrow data)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cproducer.producer.send_many import buffer_column, objects_column, offsets_column

_BYTES = (bytes, bytearray, memoryview, type(None))


def _is_buffer_offsets_pair(obj: Any) -> bool:
    return (
        isinstance(obj, tuple)
        and len(obj) == 2
        and not isinstance(obj[1], _BYTES)
        and (isinstance(obj[1], np.ndarray) or isinstance(obj[1], list))
        and not isinstance(obj[0], (list, tuple))
    )


def _arrow(obj: Any, what: str) -> Any:
    import pyarrow as pa

    if isinstance(obj, pa.ChunkedArray):
        obj = obj.combine_chunks() if obj.num_chunks != 1 else obj.chunk(0)
    t = obj.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        odt: Any = np.int32
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        odt = np.int64
    else:
        raise TypeError(f"{what}: pyarrow arrays must be binary or string typed, got {t}")
    _validity, offsets_buf, data = obj.buffers()[:3]
    valid = None
    if obj.null_count:
        valid = obj.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    return offsets_column(
        data if data is not None else b"",
        offsets_buf,
        obj.offset,
        len(obj),
        odt is np.int64,
        valid,
    )


def to_column(obj: Any, what: str) -> Any:
    """A ``send_many.Column`` for ``obj``; TypeError naming ``what`` otherwise."""
    if _is_buffer_offsets_pair(obj):
        data, offsets = obj
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or len(offsets) < 1:
            raise ValueError(f"{what}: offsets must be a 1-d array of n+1 positions")
        return buffer_column(data, offsets[:-1], offsets[1:])
    if isinstance(obj, (list, tuple)):
        return objects_column(obj, what)
    if isinstance(obj, np.ndarray):
        if obj.ndim != 1:
            raise TypeError(f"{what}: numpy arrays must be 1-d, got {obj.ndim} dimensions")
        if obj.dtype == object:
            return objects_column(obj.tolist(), what)
        if obj.dtype.kind == "S":
            arr = np.ascontiguousarray(obj)
            width = arr.dtype.itemsize
            starts = np.arange(len(arr), dtype=np.int64) * width
            lengths = (
                np.char.str_len(arr).astype(np.int64) if width else np.zeros(len(arr), np.int64)
            )
            return buffer_column(arr.view(np.uint8) if width else b"", starts, starts + lengths)
        raise TypeError(f"{what}: numpy arrays must be of object or S dtype, got {obj.dtype}")
    if type(obj).__module__.startswith("pyarrow"):
        return _arrow(obj, what)
    raise TypeError(
        f"{what} must be a list/tuple of bytes, a numpy object or S array, a pyarrow "
        f"binary/string array, or a (buffer, offsets) pair; got {type(obj).__name__}"
    )
