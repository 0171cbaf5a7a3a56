"""The ``machine`` record on an AMD GPU: device, versions, HIP/HSA environment, stream priorities."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from c3prof import __version__, trace
from c3prof.backends.hip.device import recorded_env


def _version(dist: str):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def identity(rt, device: int) -> dict:
    props = rt.device_properties(device)
    return {"name": props["name"], "pci_bus_id": rt.pci_bus_id(device)}


def machine_record(rt, torch, device: int = 0) -> dict:
    props = rt.device_properties(device)
    least, greatest = rt.stream_priority_range()
    free_b, total_b = rt.mem_get_info()
    gpu = {**props, "pci_bus_id": rt.pci_bus_id(device), "device_index": device,
           "memory_free_bytes_at_start": free_b, "memory_total_bytes": total_b}
    if torch is not None:
        gpu["torch_name"] = torch.cuda.get_device_name(device)
    return trace.machine_record(
        gpu=gpu,
        versions={
            "c3prof": __version__, "python": sys.version.split()[0], "platform": platform.platform(),
            "hip_runtime": rt.runtime_version(), "hip_driver": rt.driver_version(),
            "torch": getattr(torch, "__version__", None), "torch_hip": getattr(getattr(torch, "version", None), "hip", None),
            "triton": _version("triton"), "hip_python": _version("hip-python"),
        },
        stream_priority_range=[least, greatest],
        settings={"environment": recorded_env()},
        clocks_start={},   # clocks come from amd-smi, which this backend does not read yet (docs/backends.md)
    )
