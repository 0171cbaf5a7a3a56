from hip cimport chip as hip


cdef int raise_error(hip.hipError_t err, str call) except -1


cdef inline int check(hip.hipError_t err, str call) except -1:
    """Raise HipError naming ``call`` unless ``err`` is hipSuccess."""
    if err != hip.hipSuccess:
        raise_error(err, call)
    return 0
