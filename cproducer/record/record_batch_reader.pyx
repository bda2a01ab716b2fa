# cython: wraparound=True
# cython: freethreading_compatible=True
# Free-threaded Python: no shared state: it reads the batch of a builder its caller
# holds (under the partition deque's native mutex, as the builder).
"""The record reader: a RecordBatch v2 back into its records (Java's ``DefaultRecordBatch``
iteration, for the producer's own needs).

A batch split after MESSAGE_TOO_LARGE re-appends its records from here, and the demo shows a
batch's records; peers (kafka-python, librdkafka) are what prove the bytes in the tests. The
layout is the one ``record_batch_builder`` writes (its wire schema is at the top of that module).
"""

from cproducer.record.record_batch_builder cimport RECORDS_OFFSET, RecordBatchBuilder

from cproducer.record import compression


cdef tuple _read_varint(const unsigned char[:] buf, Py_ssize_t pos):
    cdef unsigned long long result = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        b = buf[pos]
        pos += 1
        result |= <unsigned long long>(b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return <long long>((result >> 1) ^ -(result & 1)), pos


cpdef list read_records(RecordBatchBuilder builder):
    """(timestamp, key, value, headers) of every record of ``builder``'s batch, open or closed
    (a closed one is decompressed first)."""
    cdef RecordBatchBuilder b = builder
    cdef long long length, klen, vlen, nh, hk, hv, ts_delta
    cdef Py_ssize_t pos = 0, end
    if b._closed:
        data = bytes(b.buffer())
        body = data[RECORDS_OFFSET:]
        if b._codec:
            body = compression.decompress(b._codec, body)
    else:
        body = b.open_records()
    first_ts = b._first_ts
    out = []
    view = memoryview(body)
    for _ in range(b._count):
        length, pos = _read_varint(view, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = _read_varint(view, pos)
        _offset_delta, pos = _read_varint(view, pos)
        klen, pos = _read_varint(view, pos)
        key = None if klen < 0 else body[pos:pos + klen]
        pos += max(klen, 0)
        vlen, pos = _read_varint(view, pos)
        value = None if vlen < 0 else body[pos:pos + vlen]
        pos += max(vlen, 0)
        nh, pos = _read_varint(view, pos)
        headers = []
        for _h in range(nh):
            hk, pos = _read_varint(view, pos)
            hkey = body[pos:pos + hk].decode("utf-8")
            pos += hk
            hv, pos = _read_varint(view, pos)
            headers.append((hkey, None if hv < 0 else body[pos:pos + hv]))
            pos += max(hv, 0)
        out.append((first_ts + ts_delta, key, value, headers or None))
        pos = end
    return out
