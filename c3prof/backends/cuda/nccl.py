"""NCCL collectives through torch.distributed: SM kernels (optionally CTA-limited) and copy-engine
collectives (NCCL >= 2.28), as Transport-like objects the phase timer launches on the comm stream.

How each is reached from torch (researched for torch 2.11 / NCCL 2.28; see docs/multigpu.md):

* A synchronous collective (``async_op=False``) runs on the caller's *current* stream since torch
  2.7 (pytorch#148590), so launching it under ``torch.cuda.stream(comm_stream)`` puts NCCL's
  kernel (or copies) on c3prof's comm stream, with its priority or green context.
* CTA limit: ``ProcessGroupNCCL.Options().config.max_ctas`` on a dedicated process group (NCCL's
  ``ncclConfig_t.maxCTAs``; a communicator property, so one group per limit).
* Copy engines: ``config.cta_policy = ProcessGroupNCCL.NCCL_CTA_POLICY_ZERO`` on a dedicated group,
  ``torch.distributed._symmetric_memory.set_backend("NCCL")``, buffers from ``symm_mem.empty`` and
  ``symm_mem.rendezvous`` (NCCL window registration with NCCL_WIN_COLL_SYMMETRIC). NCCL 2.28 then
  takes its CE path (``ceCollTaskAppend``) for AllGather and AlltoAll when every rank is on one
  node with NVLink P2P, both windows are symmetric and the policy is exactly ZERO; otherwise it
  silently falls back to SM kernels, which is why engine evidence is measured, not assumed.
  Where the config field is missing, ``NCCL_CTA_POLICY=2`` in the environment while the group's
  communicator is created does the same (NCCL reads it per communicator).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from c3prof.backends.cuda.dma_collective import validate_segments
from c3prof.backends.cuda.patterns import fill_pattern, pattern_words
from c3prof.plan.layout import ALIGN, PATTERN_CHUNK, Layout
from c3prof.errors import C3profError

NCCL_CTA_POLICY_ZERO = 2   # nccl.h (2.28)


def nccl_version(torch) -> tuple[int, ...] | None:
    try:
        v = torch.cuda.nccl.version()
        return tuple(v) if isinstance(v, tuple) else (v // 10000, v // 100 % 100, v % 100)
    except Exception:
        return None


def ce_support(torch) -> dict:
    """What this torch offers for NCCL's copy-engine collectives (recorded in params and the table)."""
    import torch.distributed as dist

    out = {"nccl": nccl_version(torch)}
    pg = getattr(dist, "ProcessGroupNCCL", None)
    out["process_group_nccl"] = pg is not None
    if pg is not None:
        out["config_cta_policy"] = hasattr(pg.Options().config, "cta_policy") if hasattr(pg, "Options") else False
        out["NCCL_CTA_POLICY_ZERO"] = getattr(pg, "NCCL_CTA_POLICY_ZERO", None) is not None
    try:
        import torch.distributed._symmetric_memory as symm_mem

        out["symm_mem"] = hasattr(symm_mem, "set_backend") and hasattr(symm_mem, "rendezvous")
    except ImportError:
        out["symm_mem"] = False
    out["nccl_ge_2_28"] = bool(out["nccl"] and tuple(out["nccl"][:2]) >= (2, 28))
    return out


@contextmanager
def _env(key: str, value: str | None):
    old = os.environ.get(key)
    if value is not None:
        os.environ[key] = value
    try:
        yield
    finally:
        if value is not None:
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


class NcclGroups:
    """NCCL process groups by configuration (one communicator per max_ctas / CTA policy), created on
    first use. Creation is collective: every rank asks for the same keys in the same order."""

    def __init__(self, torch, device: int, timeout):
        import torch.distributed as dist

        self.torch, self.dist, self.device, self.timeout = torch, dist, device, timeout
        self.groups: dict[tuple, object] = {}
        self.notes: dict[tuple, str] = {}

    def get(self, max_ctas: int | None = None, ce: bool = False):
        key = (max_ctas, ce)
        if key in self.groups:
            return self.groups[key]
        dist = self.dist
        if max_ctas is None and not ce:
            g = dist.group.WORLD
        else:
            opts = dist.ProcessGroupNCCL.Options()
            env = None
            if max_ctas is not None:
                opts.config.max_ctas = int(max_ctas)
            if ce:
                zero = getattr(dist.ProcessGroupNCCL, "NCCL_CTA_POLICY_ZERO", NCCL_CTA_POLICY_ZERO)
                if hasattr(opts.config, "cta_policy"):
                    opts.config.cta_policy = zero
                    self.notes[key] = "config.cta_policy = NCCL_CTA_POLICY_ZERO"
                else:
                    env = str(NCCL_CTA_POLICY_ZERO)
                    self.notes[key] = "NCCL_CTA_POLICY=2 while the communicator was created (no config.cta_policy)"
            with _env("NCCL_CTA_POLICY", env):
                g = dist.new_group(backend="nccl", pg_options=opts, timeout=self.timeout)
                # Create the communicator now (window registration can fail when a symmetric-memory
                # rendezvous is a communicator's first operation; see pytorch docs' CE example).
                dist.barrier(group=g, device_ids=[self.device])
        self.groups[key] = g
        return g


_SYMM_BACKEND_SET = False


def _use_nccl_symmetric_memory(symm_mem, torch, device: int) -> None:
    """symm_mem.set_backend("NCCL") once per process (before the first symmetric allocation)."""
    global _SYMM_BACKEND_SET
    if _SYMM_BACKEND_SET:
        return
    try:
        symm_mem.set_backend("NCCL")
    except Exception as exc:
        try:
            current = symm_mem.get_backend(torch.device("cuda", device))
        except Exception:
            current = None
        if current != "NCCL":
            raise C3profError(f"cannot select torch's NCCL symmetric memory (backend {current!r}): {exc}") from None
    _SYMM_BACKEND_SET = True


class NcclCollective:
    """all_gather / all_to_all / all_reduce through torch.distributed on one NCCL group."""

    def __init__(self, torch, group, layout: Layout, device: int, *, ce: bool = False, seed: int = 0,
                 max_ctas: int | None = None, group_note: str = ""):
        import torch.distributed as dist

        self.torch, self.dist, self.group, self.layout, self.device = torch, dist, group, layout, device
        self.ce, self.seed, self.max_ctas = ce, seed, max_ctas
        self.name = "nccl_ce" if ce else "nccl"
        self.expected_carrier = "copy_engine" if ce else "sm"
        self.nbytes = layout.nbytes
        self.group_note = group_note
        self._symm = None
        if ce:
            import torch.distributed._symmetric_memory as symm_mem

            self._symm = symm_mem
            _use_nccl_symmetric_memory(symm_mem, torch, device)
        self.dst = self._alloc(layout.dst_bytes)
        self.src = self._alloc(layout.src_bytes) if layout.src_bytes else None
        if layout.op == "all_reduce":
            self.inp = self.dst
        elif layout.op == "all_gather" and layout.inplace:
            self.inp = self.dst[layout.rank * layout.block:(layout.rank + 1) * layout.block]
        else:
            self.inp = self.src
        fill_pattern(torch, self.inp, seed, layout.rank, 0)
        torch.cuda.synchronize(device)

    def _alloc(self, n: int):
        t = self.torch
        if self._symm is not None:
            return self._symm.empty(n, dtype=t.uint8, device=t.device("cuda", self.device))
        return t.empty(n, dtype=t.uint8, device=t.device("cuda", self.device))

    def exchange(self) -> None:
        """Collective part of the setup: register the buffers as symmetric windows (CE only)."""
        if self._symm is not None:
            name = self.group.group_name
            for buf in (self.dst, self.src):
                if buf is not None:
                    self._symm.rendezvous(buf, group=name)

    def params(self) -> dict:
        return {"impl": self.name, "inplace": self.layout.inplace, "max_ctas": self.max_ctas,
                "symmetric_memory": self._symm is not None, "group_config": self.group_note,
                "world_size": self.layout.world, "rank": self.layout.rank}

    def _run(self) -> None:
        dist, op = self.dist, self.layout.op
        if op == "all_gather":
            dist.all_gather_into_tensor(self.dst, self.inp, group=self.group)
        elif op == "all_to_all":
            dist.all_to_all_single(self.dst, self.src, group=self.group)
        else:
            dist.all_reduce(self.dst, group=self.group)

    def launch(self, stream, rep: int) -> None:
        with self.torch.cuda.stream(stream.torch):
            self._run()

    def poison(self) -> None:
        t = self.torch
        if self.layout.op == "all_reduce":
            fill_pattern(t, self.dst, self.seed, self.layout.rank, 0)   # in place: reset the input
        else:
            for seg in self.layout.poison_segments():
                fill_pattern(t, self.dst[seg.dst_offset:seg.dst_offset + seg.length], self.seed, seg.src_rank,
                             seg.src_offset, invert=True)
        t.cuda.synchronize(self.device)

    def validate(self, corrupt: bool = False) -> dict:
        if self.layout.op != "all_reduce":
            return validate_segments(self.torch, self.dst, self.layout, self.seed, self.name, self.device, corrupt)
        return self._validate_all_reduce(corrupt)

    def _validate_all_reduce(self, corrupt: bool) -> dict:
        """all_reduce is in place, so repetitions keep summing: reset the input, run one more
        (untimed) all_reduce, and compare with the sum of every rank's regenerated input (uint8
        addition wraps, exactly as NCCL's ncclUint8 sum)."""
        t, lay = self.torch, self.layout
        t.cuda.synchronize(self.device)
        fill_pattern(t, self.dst, self.seed, lay.rank, 0)
        s = t.cuda.Stream(device=self.device)
        with t.cuda.stream(s):
            self._run()
        s.synchronize()
        if corrupt:
            self.dst[lay.nbytes // 3:lay.nbytes // 3 + 1].bitwise_not_()
        count, first = 0, None
        for b0 in range(0, lay.nbytes, PATTERN_CHUNK):
            k = min(PATTERN_CHUNK, lay.nbytes - b0)
            acc = t.zeros(k, dtype=t.uint8, device=self.dst.device)
            for p in range(lay.world):
                acc += pattern_words(t, b0 // ALIGN, k // ALIGN, self.seed, p, self.dst.device).view(t.uint8)
            ne = self.dst[b0:b0 + k] != acc
            c = int(ne.sum().item())
            if c and first is None:
                first = b0 + int(ne.nonzero()[0].item())
            count += c
        return {"transport": self.name, "bytes_checked": lay.nbytes, "mismatched_bytes": count,
                "first_mismatch_offset": first, "ok": count == 0, "rank": lay.rank,
                "method": "one more all_reduce from reset inputs vs the locally regenerated sum"}

    def close(self) -> None:
        self.dst = self.src = self.inp = None
