"""Issue 12, report side: every trace defect found by fuzzing is one line and exit 2, never a traceback
or a wrong answer. Traces are the SYNTHETIC committed trace with one line edited."""

from __future__ import annotations

import json

import pytest
from hardening_helpers import DATA, SYNTHETIC, cli, edited_record, first, one_line_error, trace_lines, write_edited

from c3prof.errors import TraceError
from c3prof.trace import read_trace


def report(path, *extra):
    return cli("report", path, "-q", "--resamples", "100", *extra)


def test_every_committed_trace_still_validates():
    files = sorted(DATA.glob("*.jsonl"))
    assert len(files) >= 8
    for f in files:
        assert read_trace(f).runs, f


def test_blank_lines_before_the_header_are_allowed(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n\n" + SYNTHETIC.read_text())
    assert report(p).rc == 0


@pytest.mark.parametrize("version", [0, 2, "1", True, None])
def test_version_checked_on_the_first_non_blank_line(tmp_path, version):
    header = json.loads(trace_lines()[0])
    header["version"] = version
    p = tmp_path / "t.jsonl"
    p.write_text("\n \n" + "\n".join([json.dumps(header), *trace_lines()[1:]]) + "\n")
    one_line_error(report(p), "line 3", "version")


@pytest.mark.parametrize("text,needle", [
    ("[" * 100_000 + "]" * 100_000, "nested"),          # RecursionError inside json
    ('{"record":"machine","gpu":' + '{"a":' * 40 + "1" + "}" * 40 + ',"versions":{},"clocks_start":{}}', "nested"),
    ('{"record":"end","status":"complete","n":' + "1" * 5000 + "}", "digits"),  # > 4300 digits
    ('{"record":"end","status":"complete","n":1e400}', "out of range"),        # > 1.8e308
    ('{"record":"end","status":"complete","n":NaN}', "NaN"),
    ('{"record":"end","status":"complete","n":-Infinity}', "Infinity"),
    ('{"record":["phase"]}', "unknown record type"),
    ('{"record":{"a":1}}', "unknown record type"),
    ('{"record":"error","message":"x","run":7}', "error.run has type int"),
    ('{"record":"end","status":"a\\u0000b"}', "NUL"),
    ('{"record":"end","status":"a\\ud800b"}', "surrogate"),
    (b'{"record":"end","status":"\xff\xfe"}', "UTF-8"),
])
def test_malformed_lines(tmp_path, text, needle):
    p = tmp_path / "t.jsonl"
    body = "\n".join(trace_lines()[:3]).encode() + b"\n" + (text if isinstance(text, bytes) else text.encode()) + b"\n"
    p.write_bytes(body)
    one_line_error(report(p), "line 4", needle)


def _phase(edit):
    return edited_record(first("phase"), edit)


@pytest.mark.parametrize("edit,needle", [
    (lambda r: r["samples"].__setitem__("total_ms", "12"), "total_ms"),
    (lambda r: r["samples"].__setitem__("gemm_ms", {"a": 1}), "gemm_ms"),
    (lambda r: r["samples"]["total_ms"].__setitem__(0, 5e-324), "out of range"),     # denormal
    (lambda r: r["samples"]["total_ms"].__setitem__(0, 1e-300), "out of range"),
    (lambda r: r["samples"]["total_ms"].__setitem__(0, 1e300), "out of range"),
    (lambda r: r["samples"].__setitem__("comm_start_ms", [-1.0] * len(r["samples"]["total_ms"])), "out of range"),
    (lambda r: r["scenario"].__setitem__("gemm", 5), "gemm must be a table"),
    (lambda r: r["scenario"].__setitem__("comm", "x"), "comm must be a table"),
    (lambda r: r["scenario"]["gemm"].__setitem__("m", {}), "gemm.m must be a positive integer"),
    (lambda r: r["scenario"]["gemm"].__setitem__("m", 1e308), "gemm.m must be a positive integer"),
    (lambda r: r["scenario"]["gemm"].__setitem__("m", -4096), "gemm.m must be positive"),
    (lambda r: r["scenario"]["gemm"].__setitem__("m", 10**18), "larger than c3prof runs"),
    (lambda r: r["scenario"]["gemm"].__setitem__("dtype", {"a": 1}), "unknown dtype"),
    (lambda r: r["scenario"]["comm"].__setitem__("bytes", 10**19), "more than c3prof moves"),
    (lambda r: r["scenario"]["comm"].__setitem__("bytes", 2**50), "more than c3prof moves"),
    (lambda r: r["scenario"].__setitem__("name", 7), "name"),
    (lambda r: r["scenario"].__setitem__("name", "cb\u202e4k"), "U+202E"),
    (lambda r: r["scenario"].__setitem__("weight", -1), "weight"),
    (lambda r: r.__setitem__("strategy", ["base"]), "strategy has type list"),
    (lambda r: r.__setitem__("variant", "a b"), "variant"),
    (lambda r: r.__setitem__("rounds", ["header"] * len(r["samples"]["total_ms"])), "rounds must be integers"),
    (lambda r: r.__setitem__("rounds", [[1, 2]] * len(r["samples"]["total_ms"])), "rounds must be integers"),
    (lambda r: r.__setitem__("rounds", [10**19] * len(r["samples"]["total_ms"])), "rounds must be integers"),
    (lambda r: r.__setitem__("rounds", [0]), "rounds must be a list of"),
    (lambda r: r.__setitem__("rounds", {"a": 1}), "phase.rounds has type dict"),
    (lambda r: r.__setitem__("round_group", 5), "phase.round_group has type int"),
])
def test_phase_records_are_validated_to_the_leaves(tmp_path, edit, needle):
    one_line_error(report(write_edited(tmp_path, first("phase"), _phase(edit))), needle)


def test_unknown_scenario_fields_of_a_newer_writer_are_ignored(tmp_path):
    line = _phase(lambda r: r["scenario"]["comm"].__setitem__("future_field", {"any": 1}))
    assert report(write_edited(tmp_path, first("phase"), line)).rc == 0


def test_bytes_of_400_digits_is_refused(tmp_path):
    line = _phase(lambda r: r["scenario"]["comm"].__setitem__("bytes", 0)).replace('"bytes": 0', '"bytes": ' + "9" * 400)
    one_line_error(report(write_edited(tmp_path, first("phase"), line)), "digits")


@pytest.mark.parametrize("kind,edit,needle", [
    ("machine", lambda r: r["gpu"].__setitem__("sm_count", "NAN"), "NaN"),
    ("machine", lambda r: r["clocks_start"].__setitem__("sm_mhz", "INF"), "Infinity"),
    ("ceilings", lambda r: r["gemm_flops_per_s"]["bf16"].__setitem__("value", "INF"), "Infinity"),
    ("ceilings", lambda r: r["gemm_flops_per_s"]["bf16"].__setitem__("value", 5e-324), "out of range"),
    ("counters", lambda r: r["metrics"].__setitem__(next(iter(r["metrics"])), {"unit": "byte"}), "needs a 'value'"),
    ("counters", lambda r: r["metrics"].__setitem__(next(iter(r["metrics"])), 3), "needs a 'value'"),
    ("counters", lambda r: r["metrics"][next(iter(r["metrics"]))].__setitem__("value", 5e-324), "out of range"),
    ("counters", lambda r: r["metrics"][next(iter(r["metrics"]))].__setitem__("value", -1.0), "out of range"),
    ("counters", lambda r: r.__setitem__("series", [1, 2]), "counters.series has type list"),
    ("header", lambda r: r.__setitem__("rank", 5), "rank"),
    ("validation", lambda r: r.__setitem__("mismatched_bytes", r["bytes_checked"] + 1), "out of range"),
])
def test_other_records_are_validated(tmp_path, kind, edit, needle):
    line = edited_record(first(kind), edit).replace('"NAN"', "NaN").replace('"INF"', "Infinity")
    one_line_error(report(write_edited(tmp_path, first(kind), line)), needle)


def test_no_nan_reaches_the_json_report(tmp_path):
    """NaN tokens in any field were copied into --json; now the trace is refused at the boundary."""
    line = edited_record(first("machine"), lambda r: r["gpu"].__setitem__("memory_bytes", "NAN"))
    p = write_edited(tmp_path, first("machine"), line.replace('"NAN"', "NaN"))
    one_line_error(report(p, "--json", tmp_path / "r.json"), "NaN")
    assert not (tmp_path / "r.json").exists()


def test_reader_raises_only_trace_errors(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\n".join(ln.encode() for ln in trace_lines()[:2]) + b"\n" + b"[" * 50_000 + b"\n")
    with pytest.raises(TraceError, match="line 3"):
        read_trace(p)


def test_a_run_identity_seen_valid_still_checks_the_next_phase(tmp_path):
    # The reader remembers identities (scenario, strategy, variant, run) it found valid, keyed by
    # their text: a later phase of the same run whose scenario differs only by type (4096.0 for
    # 4096, equal as numbers) must still be validated and refused.
    lines = trace_lines()
    i = first("phase")
    rec = json.loads(lines[i])
    later = next(j for j in range(i + 1, len(lines)) if json.loads(lines[j]).get("run") == rec["run"])
    edited = json.loads(lines[later])
    edited["scenario"]["gemm"]["m"] = float(edited["scenario"]["gemm"]["m"])
    one_line_error(report(write_edited(tmp_path, later, json.dumps(edited))), "gemm.m must be a positive integer")


@pytest.mark.parametrize("text,plain", [
    (b'{"record":"end","status":"complete","t":[1.5e-05,0.2]}', True),
    (b'{"record":"end","status":"complete","n":1e400}', False),                  # may overflow to inf
    (b'{"record":"end","status":"complete","n":1E+308}', False),
    (b'{"record":"end","status":"a\\u0000b"}', False),                             # NUL or surrogate escape
    (b'{"record":"end","n":' + b"9" * 310 + b'.0}', False),                      # 310-digit mantissa
    (b'{"record":"end","n":' + b"[" * 17 + b"]" * 17 + b"}", False),             # deeper than MAX_DEPTH
])
def test_plain_json_text_is_recognized_conservatively(text, plain):
    # The reader skips the per-value walk only for text that cannot fail it; anything that might
    # (the malformed lines above among them) goes through the full check.
    from c3prof.trace import _is_plain_json
    assert _is_plain_json(text) is plain


def test_plain_json_number_checks_match_the_regular_expressions():
    # _is_plain_json searches digit-normalized text for substrings; it must flag exactly the texts
    # the regular expressions [eE][+-]?\d{3} and \d{300} match (random texts over a small alphabet).
    import random
    import re

    from c3prof.trace import _is_plain_json
    rng = random.Random(0)
    pieces = [b"1", b"9", b"0", b"e", b"E", b"+", b"-", b".", b",", b'"x"', b"12", b"345"]
    for _ in range(3000):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        if rng.random() < 0.05:
            body += b"7" * rng.choice([299, 300, 301])
        raw = b'{"record":"end","t":"' + body + b'"}'
        by_regex = re.search(rb"[eE][+-]?\d{3}", raw) is None and re.search(rb"\d{300}", raw) is None
        assert _is_plain_json(raw) is by_regex, raw
