# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""CUDA errors as Python exceptions: every call's status is checked once, here.

:class:`CudaError` names the failed call and the CUDA error. Other runtime modules cimport
``check`` (errors.pxd) and call it on every status they get.
"""

from cuda.bindings cimport cyruntime as rt


class CudaError(RuntimeError):
    """A CUDA runtime call failed. ``call`` names it, ``code``/``name`` give the CUDA error."""

    def __init__(self, call, code, name, description):
        self.call = call
        self.code = code
        self.name = name
        self.description = description
        super().__init__(f"{call} failed: {name} ({code}): {description}")


# Error codes the CLI turns into "no usable GPU" messages rather than failures of c3prof.
NO_GPU_ERRORS = (int(rt.cudaErrorInsufficientDriver), int(rt.cudaErrorNoDevice))


cdef int raise_error(rt.cudaError_t err, str call) except -1:
    cdef const char* name = rt.cudaGetErrorName(err)
    cdef const char* desc = rt.cudaGetErrorString(err)
    raise CudaError(
        call,
        int(err),
        name.decode() if name != NULL else "cudaErrorUnknown",
        desc.decode() if desc != NULL else "no description",
    )
