# Declarations other runtime modules cimport (copies.pyx and memory.pyx take a Stream).
from hip cimport chip as hip


cdef class Stream:
    cdef hip.hipStream_t _s
    cdef bint _owned
    cdef readonly int priority
    cdef readonly object cu_mask


cdef class Event:
    cdef hip.hipEvent_t _e


cdef class EventPool:
    cdef hip.hipEvent_t* _ev
    cdef readonly int size

    cdef int _index(self, int i) except -1
