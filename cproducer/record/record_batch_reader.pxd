from cproducer.record.record_batch_builder cimport RecordBatchBuilder


cpdef list read_records(RecordBatchBuilder builder)
