# The poller's wake-up state, for the C paths that wake the Sender on every append:
# `from cproducer.network.selector_wakeup cimport SelectorWakeup, wake`.
cimport cython


@cython.final
cdef class SelectorWakeup:
    # a wake-up came since the poller last looked (it then polls without blocking)
    cdef readonly bint requested
    # the poller is in select (or about to enter it): a wake-up must write to the self-pipe
    cdef readonly bint selecting
    # a byte is in the self-pipe and the poller has not drained it yet
    cdef readonly bint signalled
    # the Sender can send nothing new until an answer comes (see data_muted in the .pyx): new
    # records need not wake it; set by the poller before select, cleared by end_select
    cdef public bint data_muted
    cdef object _socket  # the self-pipe's writing end
    cdef long long _fd  # its descriptor

    cdef int _signal(self) except -1


# Java's Selector.wakeup: idempotent, and cheap while the poller is busy (two C stores and a load
# on the GIL-holding thread: no Python call). Only a poller that may be blocked in select gets a
# byte, once per select.
cdef inline int wake(SelectorWakeup w) except -1:
    w.requested = True
    if w.selecting and not w.signalled:
        return w._signal()
    return 0


# An append's wake-up (a batch filled or made): none while the Sender could not send it anyway.
cdef inline int wake_for_data(SelectorWakeup w) except -1:
    if w.data_muted:
        return 0
    return wake(w)
