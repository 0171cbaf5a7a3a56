"""NVIDIA backend: torch for GEMMs, c3prof._dma for streams/events/copies, cuda-bindings for green
contexts, NVML for machine state and engine evidence. Imported only by `c3prof capture`."""
