# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. Its random state and its counters are written without a
# lock, and it calls the engine's send, which keeps the GIL.
"""The per-record path of ``AIOKafkaProducer.send``, in C (as the engine's ``FastSend``).

``send(...)`` returns a ``SendCoroutine``: a coroutine written in C (the ``Coroutine`` protocol:
``__await__``, ``send``, ``throw``, ``close``; on Python 3.10+ also the C ``am_send`` slot, so
``await`` runs it without a StopIteration). Like aiokafka's ``async def send``, nothing happens
until it is awaited (or run as a task); then, on the fast path, it appends the record and returns
its future at once, never suspending; a Cython ``async def`` would make a generator object and a
closure per record for the same work.

The fast path is taken when the producer has no serializers and aiokafka's default partitioner,
and the record is plain: bytes key and/or value of at most about half a batch, no headers, the
topic's partitions known at the current metadata version, a transaction open if the producer is
transactional, room in the buffer for a new batch, no append waiting off the loop. The work:
aiokafka's partition choice (murmur2 of the key, or a random available partition), the record's
future and its ``RecordDelivery``, one call of the engine's ``send`` (its C entry, ``send_c``, when
the engine has its fast path). Everything else goes to the
producer's Python coroutine (``slow``), which does the same with every check and error of
aiokafka, and may wait: the ``SendCoroutine`` then runs it, as ``await`` would.
"""

import asyncio
import collections.abc
import inspect
import os
import warnings

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from libc.stdint cimport uint64_t

from cproducer.compat.aiokafka.completions cimport Future, LoopCompletions, RecordDelivery
from cproducer.producer.fast_send cimport FastSend
from cproducer.producer.internals.buffer_pool cimport BufferPool
from cproducer.producer.internals.metadata_version cimport MetadataVersion
from cproducer.utils.murmur2 cimport murmur2_partition

from cproducer import errors as engine_errors
from cproducer.compat.aiokafka.errors import translate
from cproducer.producer.internals.transaction_manager import IN_TRANSACTION


cdef extern from *:
    """
    /* One step of a coroutine (PyIter_Send's contract: 1 yielded, 0 returned, -1 raised; the
       value in *presult), and the am_send slot, which Python 3.10+ uses for await. */
    #if PY_VERSION_HEX >= 0x030A0000
    static int cproducer_iter_send(PyObject *it, PyObject *arg, PyObject **presult) {
        return (int)PyIter_Send(it, arg, presult);
    }
    static int cproducer_set_am_send(PyTypeObject *t, int (*f)(PyObject *, PyObject *,
                                                               PyObject **)) {
        if (t->tp_as_async == NULL) {
            PyErr_SetString(PyExc_SystemError, "SendCoroutine has no async slots");
            return -1;
        }
        t->tp_as_async->am_send = (sendfunc)f;
        PyType_Modified(t);
        return 0;
    }
    #else
    static int cproducer_iter_send(PyObject *it, PyObject *arg, PyObject **presult) {
        PyObject *r, *type, *value, *tb;
        if (arg == Py_None && PyIter_Check(it))
            r = Py_TYPE(it)->tp_iternext(it);
        else
            r = PyObject_CallMethod(it, "send", "O", arg);
        if (r != NULL) {
            *presult = r;
            return 1;
        }
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_StopIteration))
            return -1;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (value != NULL) {
            *presult = ((PyStopIterationObject *)value)->value;
            Py_INCREF(*presult);
        } else {
            *presult = Py_None;
            Py_INCREF(Py_None);
        }
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return 0;
    }
    static int cproducer_set_am_send(PyTypeObject *t, int (*f)(PyObject *, PyObject *,
                                                               PyObject **)) {
        (void)t; (void)f;
        return 0;
    }
    #endif
    """
    int cproducer_iter_send(object it, object arg, PyObject** presult)
    ctypedef int (*send_func)(PyObject*, PyObject*, PyObject**) except -1
    int cproducer_set_am_send(type t, send_func f) except -1

cdef class TopicPartitions:
    """A topic's partition ids as of one metadata version (for partitioning and checks)."""

    cdef readonly long long version
    cdef readonly int count
    cdef readonly tuple all
    cdef readonly frozenset all_set
    #: the partitions with a leader; all of them when none has one (as aiokafka picks)
    cdef readonly tuple available
    cdef readonly Py_ssize_t n_available

    def __init__(self, long long version, tuple all_ids, tuple available):
        self.version = version
        self.all = all_ids
        self.all_set = frozenset(all_ids)
        self.count = len(all_ids)
        self.available = available if available else all_ids
        self.n_available = len(self.available)


cdef class AioFastSend:
    cdef object engine_send
    # the engine's own fast path, called in C (None: engine_send, a Python-level call)
    cdef FastSend engine_fast
    cdef object slow
    cdef object pool
    cdef BufferPool buffer_pool  # the pool when it is a BufferPool (read in C), else None
    cdef object metadata
    cdef MetadataVersion metadata_version  # the metadata's version, read in C
    cdef LoopCompletions completions
    cdef object loop
    cdef object transaction_manager
    cdef dict topics
    cdef bint transactional
    cdef long long batch_size
    cdef Py_ssize_t small_record
    cdef uint64_t rng
    #: appends waiting off the loop (counted by the slow path): later records queue behind them
    cdef public int off_loop
    #: every send takes the slow path (the producer is stopping)
    cdef public bint divert

    def __init__(self, loop, engine_send, slow, pool, metadata, LoopCompletions completions,
                 transaction_manager,
                 dict topics, bint transactional, long long batch_size, Py_ssize_t small_record):
        """``engine_send``: the engine's ``send``; when it is its ``FastSend``'s, called in C."""
        self.loop = loop
        self.engine_send = engine_send
        owner = getattr(engine_send, "__self__", None)
        self.engine_fast = owner if isinstance(owner, FastSend) else None
        self.slow = slow
        self.pool = pool
        self.buffer_pool = pool if isinstance(pool, BufferPool) else None
        self.metadata = metadata
        self.metadata_version = metadata.version_cell
        self.completions = completions
        self.transaction_manager = transaction_manager
        self.topics = topics
        self.transactional = transactional
        self.batch_size = batch_size
        self.small_record = small_record
        self.rng = int.from_bytes(os.urandom(8), "little") | 1
        self.off_loop = 0
        self.divert = False

    cdef inline uint64_t _random(self) noexcept:
        # xorshift64*: a random available partition per unkeyed record, as aiokafka's
        # random.choice, without a Python call
        cdef uint64_t x = self.rng
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        self.rng = x
        return x * <uint64_t>0x2545F4914F6CDD1D

    def send(self, topic, value=None, key=None, partition=None, timestamp_ms=None,
             headers=None):
        """``AIOKafkaProducer.send``: a coroutine (await it) that gives the record's future."""
        cdef SendCoroutine call = SendCoroutine.__new__(SendCoroutine)
        call.owner = self
        call.topic = topic
        call.value = value
        call.key = key
        call.partition = partition
        call.timestamp_ms = timestamp_ms
        call.headers = headers
        return call

    cdef object _fast(self, topic, value, key, partition, timestamp_ms, headers):
        """Append the record and return its future; None when the slow path must take it."""
        cdef TopicPartitions st = self.topics.get(topic)
        cdef Py_ssize_t klen = 0, vlen = 0
        cdef int part
        cdef RecordDelivery delivery
        cdef Future future
        if (st is None or self.divert or self.off_loop or headers is not None
                or (key is None and value is None)
                or st.version != self.metadata_version.value
                or (self.transactional and self.transaction_manager.state != IN_TRANSACTION)):
            return None
        if key is not None:
            if type(key) is not bytes:
                return None
            klen = PyBytes_GET_SIZE(key)
        if value is not None:
            if type(value) is not bytes:
                return None
            vlen = PyBytes_GET_SIZE(value)
        if klen > self.small_record or vlen > self.small_record:
            return None
        if partition is None:
            if key is None:
                part = st.available[self._random() % <uint64_t>st.n_available]
            else:
                part = murmur2_partition(<const unsigned char*>PyBytes_AS_STRING(key), klen,
                                         st.count)
        elif type(partition) is int and 0 <= partition < st.count:
            part = partition
        else:
            return None
        # a new batch's buffer is free, so the engine's append cannot wait for memory (only this
        # thread appends: the free memory cannot shrink before the append)
        if self.buffer_pool is not None:
            if self.buffer_pool.available_memory_c() < self.batch_size:
                return None
        elif self.pool.available_memory < self.batch_size:
            return None
        future = self.completions.new_future()
        delivery = RecordDelivery.__new__(RecordDelivery)
        delivery.completions = self.completions
        delivery.future = future
        try:
            if self.engine_fast is not None:
                self.engine_fast.send_c(topic, value, key, None, part, timestamp_ms, delivery)
            else:
                self.engine_send(topic, value, key, None, part, timestamp_ms, delivery)
        except engine_errors.KafkaError as exc:
            raise translate(exc) from exc
        self.completions.drain_on_loop()
        return future


cdef enum:
    _NEW = 0  # not started
    _SLOW = 1  # running the slow path's coroutine
    _DONE = 2


@cython.final
@cython.freelist(64)
cdef class SendCoroutine:
    """What ``AIOKafkaProducer.send(...)`` returns: await it for the record's future."""

    cdef AioFastSend owner
    cdef object topic
    cdef object value
    cdef object key
    cdef object partition
    cdef object timestamp_ms
    cdef object headers
    cdef object inner  # the slow path's coroutine (state _SLOW)
    cdef int state

    cdef void _forget(self) noexcept:
        self.topic = self.value = self.key = None
        self.partition = self.timestamp_ms = self.headers = None

    def __await__(self):
        return self

    def __next__(self):
        return self.send(None)

    def send(self, value):
        """One step (the ``Coroutine`` protocol; ``await`` uses the C slot)."""
        cdef PyObject* res = NULL
        cdef int status = _step(self, value, &res)
        out = <object>res
        Py_DECREF(out)  # the reference _step handed over
        if status == 0:
            raise StopIteration(out)
        return out

    def throw(self, *args):
        """Raise an exception where the coroutine waits (in the slow path's coroutine)."""
        if self.state == _SLOW:
            try:
                return self.inner.throw(*args)
            except BaseException:
                self.state = _DONE
                self.inner = None
                raise
        self.state = _DONE
        self._forget()
        return _unstarted().throw(*args)  # as a coroutine that has not started: raised here

    def close(self):
        if self.state == _SLOW:
            inner = self.inner
            self.inner = None
            self.state = _DONE
            inner.close()
        self.state = _DONE
        self._forget()

    @property
    def cr_await(self):
        return self.inner if self.state == _SLOW else None

    @property
    def cr_running(self):
        return False

    @property
    def __name__(self):
        return "send"

    @property
    def __qualname__(self):
        return "AIOKafkaProducer.send"

    def __dealloc__(self):
        if self.state == _NEW and self.owner is not None:
            # as Python warns of an ``async def`` coroutine that was never awaited (aiokafka's
            # send does nothing then, and neither does this one)
            try:
                warnings.warn(
                    "coroutine 'AIOKafkaProducer.send' was never awaited", RuntimeWarning, 2
                )
            except Exception:
                pass


cdef int _step(SendCoroutine call, object arg, PyObject** presult) except -1:
    """Run ``call`` one step; 0: returned ``*presult``, 1: yielded ``*presult`` (a new
    reference either way)."""
    cdef int status
    cdef AioFastSend owner
    if call.state == _SLOW:
        status = cproducer_iter_send(call.inner, arg, presult)
        if status != 1:
            call.state = _DONE
            call.inner = None
        return status  # (-1: its exception is set)
    if call.state == _DONE:
        raise RuntimeError("cannot reuse already awaited coroutine")
    if arg is not None:
        raise TypeError("can't send non-None value to a just-started coroutine")
    call.state = _DONE
    owner = call.owner
    try:
        future = owner._fast(call.topic, call.value, call.key, call.partition, call.timestamp_ms,
                             call.headers)
        if future is None:
            call.inner = owner.slow(call.topic, call.value, call.key, call.partition,
                                    call.timestamp_ms, call.headers)
    finally:
        call._forget()
    if future is not None:
        Py_INCREF(future)
        presult[0] = <PyObject*>future
        return 0
    call.state = _SLOW
    return _step(call, None, presult)


cdef int _am_send(PyObject* call, PyObject* arg, PyObject** presult) except -1:
    return _step(<SendCoroutine>call, <object>arg, presult)


def _unstarted():
    yield


cproducer_set_am_send(SendCoroutine, _am_send)
collections.abc.Coroutine.register(SendCoroutine)
# send is a coroutine function, as aiokafka's: asyncio.iscoroutinefunction says so (and
# inspect.iscoroutinefunction on Python 3.12+)
if hasattr(inspect, "markcoroutinefunction"):
    inspect.markcoroutinefunction(AioFastSend.send)
if hasattr(asyncio.coroutines, "_is_coroutine"):
    AioFastSend.send._is_coroutine = asyncio.coroutines._is_coroutine
