"""Optional dependency groups ("extras") and the one-line error when one is missing.

``report`` and ``ingest`` need only the base dependencies. ``capture`` also needs torch, NVML and
cuda-bindings (c3prof.backends.cuda.runtime calls the CUDA runtime through it), installed by the ``capture`` extra:
``pip install 'c3prof[capture]'``. A capture started without them fails at its first GPU import;
the CLI turns that ModuleNotFoundError into one line naming the extra instead of a traceback.
"""

from __future__ import annotations

# Top-level import name -> (distribution to install, extra that provides it).
OPTIONAL_MODULES: dict[str, tuple[str, str]] = {
    "torch": ("torch", "capture"),
    "triton": ("torch", "capture"),   # torch brings triton on Linux
    "cuda": ("cuda-bindings", "capture"),
    "pynvml": ("nvidia-ml-py", "capture"),
}


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra that provides the missing module, or None if no extra does."""
    top = (exc.name or "").split(".")[0]
    if top not in OPTIONAL_MODULES:
        return None
    distribution, extra = OPTIONAL_MODULES[top]
    return (f"missing module {exc.name!r}: install the {extra!r} extra "
            f"(pip install 'c3prof[{extra}]', which provides {distribution})")
