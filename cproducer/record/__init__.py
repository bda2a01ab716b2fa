"""The record format (Java's ``common.record``): RecordBatch v2 written by the
``RecordBatchBuilder``, read back by the record reader, and the compression codecs."""
