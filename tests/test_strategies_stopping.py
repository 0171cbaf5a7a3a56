import pytest

from c3prof.capture.stopping import StoppingRule, relative_noise
from c3prof.plan.model import PlanOptions, parse_strategies
from c3prof.plan.strategies import plan_runs, variants_for
from c3prof.errors import C3profError
from c3prof.scenarios import load_suite

OPTS = PlanOptions(sm_count=132, greatest_priority=-5)


def test_parse_strategies():
    assert parse_strategies("base, sp,dma") == ("base", "sp", "dma")
    with pytest.raises(C3profError, match="unknown strategy 'fast'"):
        parse_strategies("base,fast")


def test_variants():
    assert [v.name for v in variants_for("sp", OPTS)] == ["comm_first", "gemm_first"]
    sp = variants_for("sp", OPTS)
    assert sp[0].comm_priority == -5 and sp[0].order == "comm_first" and sp[1].gemm_priority == -5
    rp = variants_for("rp", OPTS)
    assert [(v.gemm_sms, v.comm_sms, v.comm_ctas) for v in rp] == [(104, 28, None), (120, 12, None), (None, None, 8)]
    assert variants_for("dma", OPTS)[0].transport == "ce_h2d"
    assert all(v.comm_sms is None and v.transport == "ce_h2d" for v in variants_for("dma+rp", OPTS))


@pytest.mark.parametrize("link, sm, ce", [("pcie_h2d", "sm_zc_h2d", "ce_h2d"), ("pcie_d2h", "sm_zc_d2h", "ce_d2h"),
                                          ("pcie_bidir", "sm_zc_bidir", "ce_bidir"), ("hbm", "sm_kernel", "ce_d2d")])
def test_every_strategy_moves_the_same_bytes_over_the_same_link(link, sm, ce):
    """Strategies choose the carrier, never the link."""
    for strategy in ("base", "sp", "rp", "dma", "dma+rp"):
        for v in variants_for(strategy, OPTS, link):
            assert v.link == link
            assert (v.transport, v.carrier) == ((ce, "copy_engine") if strategy.startswith("dma") else (sm, "sm"))
    assert [v.comm_ctas for v in variants_for("rp", OPTS, link) if v.gemm_sms is None] == \
        ([32] if link == "hbm" else [8])


def test_rp_bounds():
    with pytest.raises(C3profError, match="between 1 and 131"):
        variants_for("rp", PlanOptions(sm_count=132, rp_gemm_sms=(132,)))


def test_plan_runs_base_first_and_scenario_major():
    plans = plan_runs(load_suite("smoke"), ("dma", "base"), OPTS)
    assert [p.id for p in plans] == ["smoke-cb2k-x-4M/base/default", "smoke-cb2k-x-4M/dma/default",
                                     "smoke-mb-x-16M/base/default", "smoke-mb-x-16M/dma/default"]


def test_stopping_rule():
    rule = StoppingRule(min_reps=5, max_reps=8, max_noise=0.01, timeout_s=1)
    assert rule.stop_reason([1.0] * 4, 0) is None
    assert rule.stop_reason([1.0] * 5, 0) == "noise"
    noisy = [1.0, 2.0, 3.0, 1.0, 3.0]
    assert rule.stop_reason(noisy, 0) is None
    assert rule.stop_reason(noisy, 2.0) == "timeout"
    assert rule.stop_reason(noisy * 2, 0) == "max_reps"
    assert rule.next_batch(0) == 5 and rule.next_batch(5) == 3
    assert relative_noise([1.0, 1.0, 1.0]) == 0
    # 1.4826 * MAD / median by hand: median 2, |x - 2| = 1,0,1 -> MAD 1
    assert relative_noise([1.0, 2.0, 3.0]) == pytest.approx(1.4826 / 2)
    with pytest.raises(ValueError):
        StoppingRule(min_reps=5, max_reps=2)
