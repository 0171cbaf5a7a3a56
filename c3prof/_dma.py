"""Former import point of the CUDA runtime extension, kept only so that existing install checks
(``python -c "import c3prof._dma"``) still pass. New code imports
:mod:`c3prof.backends.cuda.runtime`; this module is a CUDA vendor module like it."""

from c3prof.backends.cuda.runtime import *  # noqa: F401,F403
