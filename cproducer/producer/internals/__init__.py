"""Below the facade (Java's ``clients.producer.internals``): the ``RecordAccumulator`` and its
``ProducerBatch``es in pooled buffers (``BufferPool``), the built-in partitioner, the ``Sender``
thread, the ``TransactionManager`` and the producer's view of the cluster metadata."""
