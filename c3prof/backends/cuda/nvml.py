"""NVML (nvidia-ml-py): machine identity, clocks, and GPM samples. Every call is optional: a
missing library or permission becomes a recorded reason, never a failed capture."""

from __future__ import annotations

import time


class Nvml:
    def __init__(self, device_index: int = 0):
        self.error: str | None = None
        self.handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        except Exception as exc:  # ImportError, NVMLError: both mean "no NVML here"
            self.error = f"NVML unavailable: {exc}"

    def _get(self, fn, *args, default=None):
        if self.handle is None:
            return default
        try:
            value = getattr(self.nv, fn)(self.handle, *args)
            return value.decode() if isinstance(value, bytes) else value
        except Exception:
            return default

    def identity(self) -> dict:
        if self.handle is None:
            return {"nvml_error": self.error}
        mem = self._get("nvmlDeviceGetMemoryInfo")
        pci = self._get("nvmlDeviceGetPciInfo")
        return {
            "name": self._get("nvmlDeviceGetName"),
            "uuid": self._get("nvmlDeviceGetUUID"),
            "pci_bus_id": (pci.busId.decode() if isinstance(pci.busId, bytes) else pci.busId) if pci else None,
            "memory_bytes": int(mem.total) if mem else None,
            "driver_version": _str(self.nv.nvmlSystemGetDriverVersion()),
        }

    def clocks(self) -> dict:
        if self.handle is None:
            return {"nvml_error": self.error}
        nv = self.nv
        return {
            "sm_mhz": self._get("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM),
            "mem_mhz": self._get("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM),
            "max_sm_mhz": self._get("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_SM),
            "max_mem_mhz": self._get("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_MEM),
            "temperature_c": self._get("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU),
            "power_w": (lambda mw: mw / 1000 if mw is not None else None)(self._get("nvmlDeviceGetPowerUsage")),
            "throttle_reasons": self._get("nvmlDeviceGetCurrentClocksEventReasons"),
            "unix_time": time.time(),
        }

    def gpm_support(self) -> str | None:
        """None when GPM works on this GPU, else the reason it does not."""
        if self.handle is None:
            return self.error
        try:
            if not self.nv.nvmlGpmQueryDeviceSupport(self.handle).isSupportedDevice:
                return "GPM not supported on this GPU"
        except Exception as exc:
            return f"GPM query failed: {exc}"
        return None

    def gpm_window(self, metric_names: list[str], run_for_s: float, busy: callable) -> dict:
        """Sample GPM metrics over a window while ``busy()`` keeps the GPU working.

        GPM averages over the window between two samples; NVML needs >= 100 ms between them.
        Returns {"metrics": {name: value}, "window_s": s} or {"error": reason}.
        """
        if self.handle is None:
            return {"error": self.error}
        nv = self.nv
        try:
            support = nv.nvmlGpmQueryDeviceSupport(self.handle)
            if not support.isSupportedDevice:
                return {"error": "GPM not supported on this GPU"}
            s1, s2 = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
            finish = busy()  # starts the work; returns a function that stops and waits for it
            try:
                time.sleep(0.05)  # let the work ramp up before the window opens
                nv.nvmlGpmSampleGet(self.handle, s1)
                t0 = time.perf_counter()
                time.sleep(run_for_s)
                nv.nvmlGpmSampleGet(self.handle, s2)
                window = time.perf_counter() - t0
            finally:
                finish()
            try:
                req = nv.c_nvmlGpmMetricsGet_t()
                req.version = nv.NVML_GPM_METRICS_GET_VERSION
                req.numMetrics = len(metric_names)
                req.sample1, req.sample2 = s1, s2
                for i, name in enumerate(metric_names):
                    req.metrics[i].metricId = getattr(nv, f"NVML_GPM_METRIC_{name}")
                nv.nvmlGpmMetricsGet(req)
                out = {}
                for i, name in enumerate(metric_names):
                    m = req.metrics[i]
                    out[name.lower()] = float(m.value) if m.nvmlReturn == 0 else None
                return {"metrics": out, "window_s": round(window, 4)}
            finally:
                nv.nvmlGpmSampleFree(s1)
                nv.nvmlGpmSampleFree(s2)
        except Exception as exc:  # NVMLError and friends: GPM is optional evidence
            return {"error": f"GPM sampling failed: {exc}"}


def _str(v):
    return v.decode() if isinstance(v, bytes) else v
