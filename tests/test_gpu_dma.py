"""The CUDA runtime extension on a real GPU: copies arrive byte-exact, timing events work, errors name the call."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch

    torch.cuda.init()
    return torch


def test_device_queries(torch):
    from c3prof.backends.cuda import runtime as rt

    assert rt.device_count() >= 1
    props = rt.device_properties(0)
    assert props["sm_count"] == torch.cuda.get_device_properties(0).multi_processor_count
    least, greatest = rt.stream_priority_range()
    assert greatest <= least
    free_b, total_b = rt.mem_get_info()
    assert 0 < free_b <= total_b


@pytest.mark.parametrize("mode", ["memcpy", "batch"])
@pytest.mark.parametrize("prefer_overlap", [False, True])
def test_copy_batch_h2d_d2h_byte_exact(torch, mode, prefer_overlap):
    from c3prof.backends.cuda import runtime as rt

    n, chunks = 8 * 2**20, 4
    host = rt.HostBuffer(n)
    src = np.frombuffer(host, dtype=np.uint8)
    src[:] = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    dev.copy_(torch.from_numpy(~src))                 # poison: every byte must be rewritten
    step = n // chunks
    up = rt.CopyBatch([dev.data_ptr() + i * step for i in range(chunks)],
                        [host.ptr + i * step for i in range(chunks)], [step] * chunks, mode=mode,
                        prefer_overlap=prefer_overlap)
    assert up.total_bytes == n and up.count == chunks
    s = rt.Stream()
    start, end = rt.Event(), rt.Event()
    start.record(s)
    up.enqueue(s)
    end.record(s)
    s.synchronize()
    assert start.elapsed_ms(end) > 0
    assert np.array_equal(dev.cpu().numpy(), src)
    back = rt.HostBuffer(n)
    rt.CopyBatch([back.ptr], [dev.data_ptr()], [n], mode=mode).enqueue(s)
    s.synchronize()
    assert np.array_equal(np.frombuffer(back, dtype=np.uint8), src)


def test_event_pool_and_stream_wait(torch):
    from c3prof.backends.cuda import runtime as rt

    a, b = rt.Stream(priority=rt.stream_priority_range()[1]), rt.Stream()
    pool = rt.EventPool(4)
    x = torch.empty(2**26, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    pool.record(0, a)
    rt.memcpy_async(y.data_ptr(), x.data_ptr(), x.numel(), a)
    pool.record(1, a)
    pool.wait(1, b)
    pool.record(2, b)
    pool.synchronize(2)
    t1, t2 = pool.elapsed_from(0, [1, 2])
    assert 0 < t1 <= t2
    assert a.priority == rt.stream_priority_range()[1]
    with pytest.raises(IndexError):
        pool.record(4, a)


def test_errors_name_the_failing_call(torch):
    from c3prof.backends.cuda import runtime as rt

    with pytest.raises(rt.CudaError, match=r"cudaSetDevice\(999\) failed: cudaErrorInvalidDevice"):
        rt.set_device(999)
    rt.set_device(0)
    with pytest.raises(rt.CudaError, match="cudaIpcOpenEventHandle failed"):
        rt.Event(ipc_handle=b"\0" * 64)
    with pytest.raises(ValueError):
        rt.CopyBatch([1], [2], [0])


def test_ipc_handles_export(torch):
    from c3prof.backends.cuda import runtime as rt

    buf = rt.DeviceBuffer(2**20)
    assert len(buf.ipc_handle()) == 64
    assert len(rt.Event(interprocess=True).ipc_handle()) == 64
