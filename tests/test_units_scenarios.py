import pytest

from c3prof.errors import C3profError, ScenarioError
from c3prof.scenarios import (GemmSpec, dump_scenarios, load_scenario_file, load_suite, parse_scenarios,
                              suite_names)
from c3prof.units import format_bytes, parse_bytes


@pytest.mark.parametrize("text,expected", [("4096", 4096), (4096, 4096), ("64KiB", 65536), ("256MiB", 256 * 2**20),
                                           ("1GiB", 2**30), ("1.5KiB", 1536), ("2MB", 2_000_000)])
def test_parse_bytes(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("bad", ["0", -5, "12XB", "1.3B", "", True, None, [1], "-1MiB"])
def test_parse_bytes_rejects(bad):
    with pytest.raises(C3profError):
        parse_bytes(bad)


def test_format_bytes():
    assert format_bytes(2**30) == "1GiB"
    assert format_bytes(3 * 2**20) == "3MiB"
    assert format_bytes(1000) == "1000B"


def test_gemm_intensity_by_hand():
    g = GemmSpec(64, 16384, 16384, "bf16")
    flops = 2 * 64 * 16384 * 16384
    nbytes = (64 * 16384 + 16384 * 16384 + 64 * 16384) * 2
    assert g.flops == flops and g.min_bytes == nbytes
    assert g.arithmetic_intensity == pytest.approx(flops / nbytes)


def test_builtin_suites_load():
    assert {"smoke", "default"} <= set(suite_names())
    default = load_suite("default")
    assert {s.comm.link for s in default} == {"pcie_h2d", "pcie_d2h", "pcie_bidir", "hbm"}
    assert any(s.comm.chunks > 1 for s in default)          # latency-bound, chunked transfers
    assert {t for s in default for t in s.tags} >= {"compute-bound", "memory-bound", "latency-bound",
                                                     "kv-offload", "kv-reload", "fsdp-cpu-offload",
                                                     "zero-offload", "activation-offload"}


def test_dump_round_trip():
    scenarios = load_suite("default")
    assert parse_scenarios(dump_scenarios(scenarios, "round trip"), "x") == scenarios


def test_transfer_links_and_chunks():
    doc = """
[[scenario]]
name = "a"
gemm = { m = 128, n = 256, k = 512 }
comm = { op = "transfer", link = "pcie_d2h", bytes = "4MiB", chunk = "1MiB" }
"""
    (s,) = parse_scenarios(doc, "x")
    assert (s.comm.link, s.comm.chunk, s.comm.chunks) == ("pcie_d2h", 2**20, 4)
    assert s.comm.to_dict() == {"op": "transfer", "bytes": 4 * 2**20, "link": "pcie_d2h", "chunk": 2**20}
    (legacy,) = parse_scenarios(doc.replace('link = "pcie_d2h", ', "").replace(', chunk = "1MiB"', ""), "x")
    assert (legacy.comm.link, legacy.comm.chunks) == ("pcie_h2d", 1)   # the default link
    for bad, msg in (('link = "nvlink9"', "unknown link"), ('chunk = "3MiB"', "must divide"),
                     ('chunk = "1000B"', "must divide")):
        text = doc.replace('link = "pcie_d2h"', bad) if "link" in bad else doc.replace('chunk = "1MiB"', bad)
        with pytest.raises(ScenarioError, match=msg):
            parse_scenarios(text, "x")
    with pytest.raises(ScenarioError, match="multiple of 16"):
        parse_scenarios(doc.replace('bytes = "4MiB", chunk = "1MiB"', 'bytes = "1000B", chunk = "100B"'), "x")
    with pytest.raises(ScenarioError, match="transfer"):
        parse_scenarios(doc.replace('op = "transfer"', 'op = "all_gather"'), "x")


GOOD = """
[[scenario]]
name = "a"
gemm = { m = 128, n = 256, k = 512 }
comm = { op = "transfer", bytes = "1MiB" }
"""


@pytest.mark.parametrize("text,message", [
    ("[[scenario", "not valid TOML"),
    ("format = 2\n" + GOOD, "format 2 is not supported"),
    ("", "no scenarios"),
    (GOOD.replace("m = 128", "m = -128"), "gemm.m must be positive"),
    (GOOD.replace("m = 128", "m = 1.5"), "gemm.m must be a positive integer"),
    (GOOD.replace('"1MiB"', '"0"'), "must be positive"),
    (GOOD.replace('"1MiB"', '"lots"'), "cannot read 'lots'"),
    (GOOD.replace('op = "transfer"', 'op = "broadcast"'), "unknown operation 'broadcast'"),
    (GOOD.replace("k = 512 }", 'k = 512, dtype = "int4" }'), "unknown dtype 'int4'"),
    (GOOD.replace("k = 512 }", "k = 512, z = 1 }"), "unknown field(s) z"),
    (GOOD + GOOD, "appears twice"),
    (GOOD.replace('name = "a"', 'name = "a b"'), "must not contain"),
    (GOOD.replace('comm = { op = "transfer", bytes = "1MiB" }', ""), "needs both"),
])
def test_scenario_errors_name_the_problem(text, message):
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_scenarios(text, "my.toml")


def test_error_names_file_and_scenario(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD.replace("n = 256", "n = 0"))
    with pytest.raises(ScenarioError) as exc:
        load_scenario_file(p)
    assert str(p) in str(exc.value) and "'a'" in str(exc.value) and "gemm.n" in str(exc.value)


def test_missing_file():
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        load_scenario_file("/nonexistent/s.toml")


def _text_problem_by_character(text: str, is_name: bool) -> str | None:
    """text_problem's rule applied character by character (its slow path), as the reference."""
    import unicodedata
    for c in text:
        if c in "\n\t" and not is_name:
            continue
        category = unicodedata.category(c)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            return f"holds the invisible or control character U+{ord(c):04X}"
        if is_name and (c == "/" or category.startswith("Z")):
            return "must not contain '/' or spaces"
    return None


@pytest.mark.parametrize("is_name", [True, False])
def test_text_problem_ascii_fast_path_agrees_with_the_character_rule(is_name):
    from c3prof.scenarios import text_problem
    for code in range(128):
        for text in (f"a{chr(code)}b", chr(code), f"{chr(code)}x/y", "name with\u00a0nbsp"):
            assert text_problem(text, is_name=is_name) == _text_problem_by_character(text, is_name), repr(text)
