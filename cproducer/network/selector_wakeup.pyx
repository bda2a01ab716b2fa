# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The three flags are read and written without a lock: the
# protocol below relies on each side's store-then-load running under the GIL.
"""The wake-up of the ``NetworkClient``'s poller (Java's ``Selector.wakeup``), as C flags.

An application thread wakes the Sender on nearly every append while batches queue up (Java's
rule: a full batch, or a new one). Most of those wake-ups find the Sender busy: it is not in
``select``, and only needs to look at the accumulator again before it next blocks. So a wake-up
is a flag (``requested``), and the self-pipe gets a byte only when the poller may be blocked in
``select`` (``selecting``), once until the poller drains it (``signalled``). The C paths of
``send`` call ``wake`` (an inline function of the .pxd), everything else ``wakeup()``.

Why no wake-up is lost: the waker sets ``requested`` and then reads ``selecting``; the poller
sets ``selecting`` and then reads and clears ``requested`` (``begin_select``). Each side's pair
runs under the GIL, so one of them sees the other: either the poller finds ``requested`` (it
polls without blocking), or the waker finds ``selecting`` (it writes a byte, which makes
``select`` return). A waker that finds ``signalled`` set writes nothing: a byte is still in the
pipe, or the poller is past ``select`` and drains it (``drained``) before it goes on to a full
Sender iteration, which sees whatever that wake-up was for; its next ``begin_select`` also finds
``requested`` set.

New records wake the poller only when it could send them (``wake_for_data``). When every
broker's connection is at its in-flight limit (one request at a time, as aiokafka and
``max.in.flight.requests.per.connection=1`` keep order), the Sender can send nothing new until an
answer comes, and an answer is I/O: it ends ``select`` by itself. The poller then sets
``data_muted`` before ``select``; an append that fills or makes a batch leaves it be, and the
Sender's next full iteration, after the answer, sees the batch. Each such wake-up cost a GIL
hand-over both ways (the woken Sender takes the GIL from the appending thread only to find it
has nothing to send, then the appending thread waits to get it back), about one per request.
``end_select`` clears the flag: a poller that is not selecting reads the accumulator anyway.
Explicit wake-ups (flush, close, transactions, metadata) always wake.

The byte is written in C with the GIL held (POSIX): the socket is non-blocking, so the call
cannot wait, and a Python-level ``send`` would give up the GIL for it. The poller, woken by that
very byte, would take the GIL in the meantime, and the appending thread would then wait for the
poller's whole iteration (or the interpreter's switch interval) to get it back, in the middle of
its sends. Windows writes through the socket object.
"""

cdef extern from *:
    """
    #ifdef _WIN32
    /* the socket object's send (winsock handles are not file descriptors here) */
    static int cproducer_wake_byte(long long fd) { (void)fd; return -2; }
    #else
    #include <errno.h>
    #include <sys/socket.h>
    #ifndef MSG_NOSIGNAL
    #define MSG_NOSIGNAL 0
    #endif
    /* one byte, never blocking: 1 written, 0 the pipe is full (a byte is waiting anyway) or
       the socket closed, -2 not available here */
    static int cproducer_wake_byte(long long fd) {
        ssize_t n;
        do {
            n = send((int)fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        return n == 1 ? 1 : 0;
    }
    #endif
    """
    int cproducer_wake_byte(long long fd) nogil


cdef class SelectorWakeup:
    """The flags of one poller and the writing end of its self-pipe."""

    def __init__(self, wake_socket):
        """``wake_socket``: the non-blocking writing end of the poller's self-pipe."""
        self._socket = wake_socket
        self._fd = wake_socket.fileno()
        self.requested = False
        self.selecting = False
        self.signalled = False
        self.data_muted = False

    cdef int _signal(self) except -1:
        self.signalled = True
        if self._fd < 0:  # closed
            return 0
        if cproducer_wake_byte(self._fd) != -2:
            return 0
        try:
            self._socket.send(b"\x00")
        except OSError:  # the pipe is full (it is being drained) or closed
            pass
        return 0

    def close(self):
        """Before the self-pipe closes: later wake-ups write nothing (its descriptor number may
        be given to another socket)."""
        self._fd = -1
        self._socket = None

    def wakeup(self):
        """Make the current or next poll return at once (any thread)."""
        wake(self)

    def wakeup_for_data(self):
        """New records to send (a batch filled or made): ``wakeup`` unless ``data_muted``."""
        wake_for_data(self)

    def begin_select(self):
        """The poller, before ``select``: True when a wake-up came since the last one (poll
        without blocking). ``end_select`` after it."""
        cdef bint requested
        self.selecting = True
        requested = self.requested
        self.requested = False
        return requested

    def end_select(self):
        """The poller, after ``select`` returned."""
        self.selecting = False
        self.data_muted = False

    def drained(self):
        """The poller emptied the self-pipe: the next wake-up while it selects writes again."""
        self.signalled = False
