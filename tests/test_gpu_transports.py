"""Every link's carriers on a real GPU: same bytes, same link, byte-exact, in chunks, and a fault is caught.

For each link the SM carrier (zero-copy copy kernel over PCIe, device copy kernel on HBM) and the
copy-engine carrier move the scenario's bytes; each is poisoned, launched, synchronized and compared
byte for byte with its reference, then one byte is flipped on purpose and must be reported.
"""

import pytest

pytestmark = pytest.mark.gpu

LINKS = ("pcie_h2d", "pcie_d2h", "pcie_bidir", "hbm")


@pytest.fixture(scope="module")
def torch():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and torch with CUDA")
    torch.cuda.init()
    return torch


@pytest.fixture(scope="module")
def stream(torch):
    from c3prof.backends.cuda.streams import make_stream

    return make_stream(torch, label="test")


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("carrier", ["sm", "copy_engine"])
@pytest.mark.parametrize("chunk", [None, 256 * 1024])
def test_carrier_is_byte_exact(torch, stream, link, carrier, chunk):
    from c3prof.backends.cuda.transports import TransferBuffers, make_transport, transport_for

    nbytes = 4 * 2**20 + 4096 * 16   # not a power of two: the kernel's tail is exercised
    if chunk:
        nbytes = 16 * chunk
    buffers = TransferBuffers(torch, link, nbytes, seed=11)
    t = make_transport(torch, transport_for(link, carrier), buffers, ctas=16, chunk=chunk)
    assert t.link == link and t.expected_carrier == carrier
    for rep in range(2):
        t.poison()
        assert not t.validate()["ok"]                 # poisoned: every byte differs from the reference
        t.launch(stream, rep)
        stream.dma.synchronize()
        result = t.validate()
        assert result["ok"] and result["mismatched_bytes"] == 0, result
        assert result["bytes_checked"] == nbytes * len(buffers.pairs)
    bad = t.validate(corrupt=True)
    assert not bad["ok"] and bad["mismatched_bytes"] == 1 and bad["first_mismatch_offset"] == nbytes // 3


def test_zero_copy_buffers_live_in_host_memory(torch):
    """The SM carrier of a PCIe link really crosses PCIe: its host-side buffers are pinned host memory."""
    from c3prof.backends.cuda import runtime as rt
    from c3prof.backends.cuda.transports import TransferBuffers

    b = TransferBuffers(torch, "pcie_bidir", 2**20)
    h2d, d2h = b.pairs
    assert h2d.src.is_pinned() and not h2d.src.is_cuda and h2d.dst.is_cuda
    assert d2h.dst.is_pinned() and not d2h.dst.is_cuda and d2h.src.is_cuda
    assert rt.pointer_info(h2d.src.data_ptr())["type"] == "host"


def _timed_ms(torch, stream, launch) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream.torch)
    launch()
    end.record(stream.torch)
    end.synchronize()
    return start.elapsed_time(end)


@pytest.mark.parametrize("link", ["pcie_h2d", "pcie_bidir"])
@pytest.mark.parametrize("carrier", ["sm", "copy_engine"])
def test_a_gap_between_copies_slows_the_transfer_and_keeps_it_byte_exact(torch, stream, link, carrier):
    """The interference study's throttle: 8 copies of 1 MiB with a 200 us pause between them take at
    least 7 pauses longer than back to back, and still move every byte."""
    from c3prof.backends.cuda.transports import TransferBuffers, make_transport, transport_for

    buffers = TransferBuffers(torch, link, 8 * 2**20, seed=5)
    name = transport_for(link, carrier)
    plain = make_transport(torch, name, buffers, ctas=16, chunk=2**20)
    gapped = make_transport(torch, name, buffers, ctas=16, chunk=2**20, gap_us=200.0)
    times = {}
    for label, t in (("plain", plain), ("gapped", gapped)):
        t.launch(stream, 0)                       # warm-up (kernel compile, first-touch)
        t.poison()
        times[label] = _timed_ms(torch, stream, lambda t=t: t.launch(stream, 1))
        assert t.validate()["ok"]
    assert times["gapped"] > times["plain"] + 7 * 0.2 * 0.5, times   # the spin clock is only roughly 2 GHz


def test_the_sleep_control_spins_for_about_its_duration(torch, stream):
    from c3prof.backends.cuda.transports import SleepTransport

    t = SleepTransport(torch, 2000.0)
    t.launch(stream, 0)
    ms = _timed_ms(torch, stream, lambda: t.launch(stream, 1))
    assert 1.0 < ms < 4.0, ms
    with pytest.raises(RuntimeError, match="moves no bytes"):
        t.validate()
