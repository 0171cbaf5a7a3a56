"""The interference dose-response on SYNTHETIC arms (stated numbers): dose, response, threshold bracket."""

from c3prof.analysis.interference import Arm, _bracket


def arm(rate, lo, hi, value=None):
    v = (lo + hi) / 2 if value is None else value
    return Arm("s", "pcie_h2d", "g", 2**20, 1, rate, v, [lo, hi], None, None, 1.0)


def test_bracket_between_quiet_and_loud_doses():
    b = _bracket([arm(8.0, 1.000, 1.010), arm(32.0, 1.005, 1.015), arm(50.0, 1.06, 1.09)], 1.02)
    assert (b["no_slowdown_up_to_gbps"], b["slowdown_from_gbps"]) == (32.0, 50.0)
    assert "between 32.0 and 50.0 GB/s" in b["text"]


def test_bracket_one_sided_and_straddling_arms():
    only_loud = _bracket([arm(16.8, 1.014, 1.021), arm(51.0, 1.08, 1.09)], 1.02)
    assert only_loud["no_slowdown_up_to_gbps"] is None and only_loud["slowdown_from_gbps"] == 51.0
    assert "no arm is clearly below" in only_loud["text"]      # the 16.8 GB/s arm straddles 1.02
    only_quiet = _bracket([arm(50.0, 1.0, 1.01)], 1.02)
    assert only_quiet["slowdown_from_gbps"] is None and "no arm is slowed" in only_quiet["text"]
    assert "cannot be placed" in _bracket([arm(10.0, 1.01, 1.03)], 1.02)["text"]


def test_non_monotone_response_is_said():
    b = _bracket([arm(8.0, 1.05, 1.07), arm(50.0, 1.00, 1.01)], 1.02)
    assert "not monotone" in b["text"]
