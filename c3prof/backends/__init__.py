"""Device backends behind one interface (c3prof/backends/base.py), chosen by name.

    get_backend("cuda")     the backend object (imports its package only now)
    names()                 registered backend names
    default_name()          the first registered backend that imports and sees a device, else the
                            first that imports (its open_bench then says why no device is usable)

``cuda`` is the NVIDIA backend, ``hip`` the AMD one (docs/backends.md). A backend registers here with
the module that defines its ``BACKEND`` object; nothing in capture/ changes. ``auto`` tries them in
this order, so an NVIDIA machine keeps choosing ``cuda``.
"""

from __future__ import annotations

import importlib

from c3prof.errors import C3profError

# name -> module defining BACKEND (a c3prof.backends.base.Backend). Imported lazily: importing a
# backend may load vendor libraries.
REGISTRY = {"cuda": "c3prof.backends.cuda.backend", "hip": "c3prof.backends.hip.backend"}
AUTO = "auto"


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def _load(name: str):
    module = importlib.import_module(REGISTRY[name])
    return module.BACKEND


def get_backend(name: str = AUTO):
    """The backend called ``name`` (``auto``: :func:`default_name`), ready to use, or a
    one-line C3profError (exit status 2) naming what is unknown or missing."""
    if name == AUTO:
        name = default_name()
    if name not in REGISTRY:
        raise C3profError(f"unknown backend {name!r} (available: {', '.join(names())}, {AUTO})")
    backend = _load(name)
    reason = backend.unavailable_reason()
    if reason:
        raise C3profError(f"backend {name!r} is not usable here: {reason}")
    return backend


def default_name() -> str:
    usable = []
    for name in REGISTRY:
        backend = _load(name)
        if backend.unavailable_reason() is None:
            if backend.device_count() > 0:
                return name
            usable.append(name)
    return usable[0] if usable else next(iter(REGISTRY))


def isolate_devices(name: str, local_rank: int, share_gpu: bool) -> str:
    """Show this process only its own device, for backend ``name`` (``auto``: every registered
    backend that finds GPUs on this node, since choosing one queries devices, after which the
    visible set is fixed). Must run before anything queries a device. Returns what was set (the
    last backend's value); with ``auto``, fails only when no backend finds a GPU to isolate."""
    chosen = [n for n in REGISTRY if name in (AUTO, n)]
    if not chosen:
        raise C3profError(f"unknown backend {name!r} (available: {', '.join(names())}, {AUTO})")
    values, errors = [], []
    for n in chosen:
        try:
            values.append(_load(n).isolate_device(local_rank, share_gpu))
        except C3profError as exc:
            if name != AUTO:
                raise
            errors.append(exc)
    if not values:
        raise errors[0]
    return values[-1]
