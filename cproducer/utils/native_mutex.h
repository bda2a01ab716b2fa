/* A native mutex for the hot locks (accumulator deques, BufferPool): uncontended, one atomic
 * operation each way. A PyThread lock is a semaphore, and CPython 3.11 reads the monotonic clock
 * even for a non-blocking try (~40 ns a pair against ~8 ns). Callers try without releasing the
 * GIL and block with it released. */
#ifndef CPRODUCER_NATIVE_MUTEX_H
#define CPRODUCER_NATIVE_MUTEX_H

#ifdef _WIN32
#include <windows.h>
typedef SRWLOCK cp_mutex;
static int cp_mutex_init(cp_mutex* m) { InitializeSRWLock(m); return 0; }
static void cp_mutex_destroy(cp_mutex* m) { (void)m; }
static int cp_mutex_trylock(cp_mutex* m) { return TryAcquireSRWLockExclusive(m) ? 1 : 0; }
static void cp_mutex_lock(cp_mutex* m) { AcquireSRWLockExclusive(m); }
static void cp_mutex_unlock(cp_mutex* m) { ReleaseSRWLockExclusive(m); }
#else
#include <pthread.h>
typedef pthread_mutex_t cp_mutex;
static int cp_mutex_init(cp_mutex* m) { return pthread_mutex_init(m, NULL); }
static void cp_mutex_destroy(cp_mutex* m) { pthread_mutex_destroy(m); }
static int cp_mutex_trylock(cp_mutex* m) { return pthread_mutex_trylock(m) == 0; }
static void cp_mutex_lock(cp_mutex* m) { pthread_mutex_lock(m); }
static void cp_mutex_unlock(cp_mutex* m) { pthread_mutex_unlock(m); }
#endif

#include <stdlib.h>

/* A mutex on the heap, initialised; NULL when it cannot be allocated or initialised. */
static cp_mutex* cp_mutex_new(void) {
    cp_mutex* m = (cp_mutex*)malloc(sizeof(cp_mutex));
    if (m != NULL && cp_mutex_init(m) != 0) {
        free(m);
        m = NULL;
    }
    return m;
}

static void cp_mutex_free(cp_mutex* m) {
    if (m != NULL) {
        cp_mutex_destroy(m);
        free(m);
    }
}

#endif
