"""CU-mask arithmetic of the HIP backend (c3prof/backends/hip/cu_masks.py): pure Python, no ROCm."""

import pytest
from hypothesis import given, strategies as st

from c3prof.backends.hip import cu_masks as cm
from c3prof.errors import C3profError


def test_mi300x_geometry():
    g = cm.MI300X
    assert (g.cus, g.xcds, g.cus_per_xcd, g.words) == (304, 8, 38, 10)
    assert cm.geometry_for(304) == g and cm.geometry_for(228) == cm.MI300A
    assert cm.geometry_for(38) == cm.Geometry(38, 1)          # a CPX partition: one XCD
    # XCD round-robin numbering: CU i is on XCD i % 8, as the (i // 8)-th CU there.
    assert [g.xcd_of(i) for i in range(10)] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    assert g.cu(xcd=3, slot=2) == 19 and g.xcd_of(19) == 3


def test_known_mask_words():
    # 8 CUs: slot 0 of every XCD = CUs 0..7 = the low byte of word 0.
    p = cm.split(8, cm.MI300X)
    assert p.gemm_mask == [0xFF] + [0] * 9
    # 16 CUs: slots 0 and 1 = CUs 0..15.
    assert cm.split(16, cm.MI300X).gemm_mask == [0xFFFF] + [0] * 9
    # The communication side holds every other CU, up to CU 303 (bit 15 of word 9).
    comm = p.comm_mask
    assert comm[0] == 0xFFFFFF00 and comm[1:9] == [0xFFFFFFFF] * 8 and comm[9] == 0xFFFF


def test_requests_round_up_to_whole_xcd_rows():
    assert cm.granted(1, cm.MI300X) == 8        # at least one CU per XCD
    assert cm.granted(100, cm.MI300X) == 104    # 13 per XCD
    assert cm.granted(296, cm.MI300X) == 296    # 37 per XCD leaves one per XCD to communication
    with pytest.raises(C3profError, match="leaves none for communication"):
        cm.granted(297, cm.MI300X)
    with pytest.raises(C3profError, match="at least one CU"):
        cm.split(0, cm.MI300X)


@given(st.integers(min_value=1, max_value=296))
def test_split_is_disjoint_complete_and_balanced(n):
    g = cm.MI300X
    p = cm.split(n, g)
    assert p.gemm_cus.isdisjoint(p.comm_cus) and p.gemm_cus | p.comm_cus == set(range(g.cus))
    gemm_counts, comm_counts = cm.per_xcd(p.gemm_cus, g), cm.per_xcd(p.comm_cus, g)
    assert len(set(gemm_counts)) == 1 and len(set(comm_counts)) == 1   # same count on every XCD
    assert min(gemm_counts) >= 1 and min(comm_counts) >= 1
    assert len(p.gemm_cus) == cm.granted(n, g) >= n
    assert cm.from_words(p.gemm_mask) == p.gemm_cus and cm.from_words(p.comm_mask) == p.comm_cus


@given(st.sets(st.integers(min_value=0, max_value=303)))
def test_words_round_trip(cus):
    words = cm.to_words(cus, 10)
    assert all(0 <= w < 2**32 for w in words)
    assert cm.from_words(words) == cus


def test_bad_input():
    with pytest.raises(ValueError, match="outside a mask"):
        cm.to_words([320], 10)
    with pytest.raises(ValueError, match="evenly"):
        cm.Geometry(300, 8)
