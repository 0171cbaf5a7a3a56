# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""HIP errors as Python exceptions: every call's status is checked once, here.

:class:`HipError` names the failed call and the HIP error. Other runtime modules cimport
``check`` (errors.pxd) and call it on every status they get.
"""

from hip cimport chip as hip


class HipError(RuntimeError):
    """A HIP runtime call failed. ``call`` names it, ``code``/``name`` give the HIP error."""

    def __init__(self, call, code, name, description):
        self.call = call
        self.code = code
        self.name = name
        self.description = description
        super().__init__(f"{call} failed: {name} ({code}): {description}")


# Error codes the CLI turns into "no usable GPU" messages rather than failures of c3prof.
NO_GPU_ERRORS = (int(hip.hipErrorInsufficientDriver), int(hip.hipErrorNoDevice))


cdef int raise_error(hip.hipError_t err, str call) except -1:
    cdef const char* name = hip.hipGetErrorName(err)
    cdef const char* desc = hip.hipGetErrorString(err)
    raise HipError(
        call,
        int(err),
        name.decode() if name != NULL else "hipErrorUnknown",
        desc.decode() if desc != NULL else "no description",
    )
