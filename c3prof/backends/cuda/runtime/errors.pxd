from cuda.bindings cimport cyruntime as rt


cdef int raise_error(rt.cudaError_t err, str call) except -1


cdef inline int check(rt.cudaError_t err, str call) except -1:
    """Raise CudaError naming ``call`` unless ``err`` is cudaSuccess."""
    if err != rt.cudaSuccess:
        raise_error(err, call)
    return 0
