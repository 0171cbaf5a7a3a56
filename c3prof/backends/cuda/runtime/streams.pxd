# Declarations other runtime modules cimport (copies.pyx and memory.pyx take a Stream).
from cuda.bindings cimport cyruntime as rt


cdef class Stream:
    cdef rt.cudaStream_t _s
    cdef bint _owned
    cdef readonly int priority


cdef class Event:
    cdef rt.cudaEvent_t _e


cdef class EventPool:
    cdef rt.cudaEvent_t* _ev
    cdef readonly int size

    cdef int _index(self, int i) except -1
