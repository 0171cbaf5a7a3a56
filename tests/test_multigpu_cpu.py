"""The multi-GPU capture's distributed glue on CPU: torchrun + gloo + a SYNTHETIC bench (tests/fakes.py).

Real processes, a real process group and real rank traces; only the GPU is simulated. Checks: rank
files and headers, the plan hash across ranks (mismatched sizes fail on every rank), agreed
stopping (a noisy rank and a quiet one record the same repetitions), a rank dying mid-capture
(the others stop with a message, no hang, completed phases kept), too many ranks for the GPUs.

This file is also the worker that torchrun starts: ``python tests/test_multigpu_cpu.py worker ...``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SCENARIOS = """format = 1
[[scenario]]
name = "ag-x"
gemm = {{ m = 256, n = 256, k = 256, dtype = "bf16" }}
comm = {{ op = "all_gather", bytes = "{ag}" }}
[[scenario]]
name = "a2a-x"
gemm = {{ m = 256, n = 256, k = 256, dtype = "bf16" }}
comm = {{ op = "all_to_all", bytes = "1MiB" }}
"""


# ------------------------------------------------------------------------------------------------
# The worker (runs under torchrun)
# ------------------------------------------------------------------------------------------------

def _fake_bench_factory(opts):
    sys.path.insert(0, str(HERE))
    from fakes import FakeBench, FakeClock, FakePool, FakeStream, FakeTransport, FakeWork

    from c3prof.capture.phases import PhaseTimer

    class NoisyWork(FakeWork):
        """Durations cycling through ``pattern`` (a noisy kernel)."""

        def __init__(self, pattern):
            super().__init__(pattern[0])
            self.pattern = pattern

        def launch(self, stream, rep):
            self.ms = self.pattern[self.launches % len(self.pattern)]
            super().launch(stream, rep)

    class FakeDistBench(FakeBench):
        def __init__(self, ctrl, rank, world, device, timeout):
            super().__init__()
            self.ctrl, self.rank, self.world = ctrl, rank, world
            self.sm_count, self.priority_range = 132, (0, -5)
            self.distributed_info = {}
            self.device, self.seed = device, 0
            self.phases_done = 0

        def check_fits(self, scenario, transports):
            pass

        def engine_evidence_record(self, transport):
            rec = super().engine_evidence_record(transport)
            return {**rec, "carrier": opts.get("evidence_by_rank", {}).get(str(self.rank), rec["carrier"])}

        def machine_record(self):
            rec = super().machine_record()
            rec["distributed"] = dict(self.distributed_info)
            return rec

        def open_variant(self, setup, variant):
            bench = self
            clock = FakeClock()
            noisy = opts.get("noisy_rank") == self.rank
            gemm = NoisyWork([2.0, 2.6, 1.5, 3.1]) if noisy else FakeWork(2.0)
            transport = FakeTransport(1.0, name=variant.transport)

            def gate(stream, reps, key=None):      # the real bench's agreed gate: a barrier over the control group
                bench.ctrl.barrier()

            class Timer(PhaseTimer):
                def run_batch(self, phase, reps):
                    if opts.get("die_rank") == bench.rank and bench.phases_done >= opts.get("die_after", 0):
                        os._exit(7)      # a crash: no message, no end record
                    bench.phases_done += 1   # counts batches
                    return super().run_batch(phase, reps)

            timer = Timer(gemm, transport, FakeStream("g", clock), FakeStream("c", clock), variant.order,
                          make_pool=lambda n: FakePool(n, clock), gate=gate)

            class Setup:
                def __init__(self):
                    self.timer, self.transport, self.params = timer, transport, {**variant.params(), "rank": bench.rank}

                def close(self):
                    pass

            return Setup()

    return FakeDistBench


def worker(argv: list[str]) -> int:
    import json

    sys.path.insert(0, str(ROOT))
    opts = json.loads(argv[0])
    rank = int(os.environ["RANK"])
    capture_argv = opts["argv"]
    if opts.get("mismatch_rank") == rank:
        capture_argv = [a.replace("scen.toml", "scen_other.toml") for a in capture_argv]
    from c3prof.capture import distributed
    from c3prof.cli import build_parser
    from c3prof.errors import C3profError

    args = build_parser(only="capture").parse_args(["capture", *capture_argv])
    try:
        return distributed.run_rank(args, bench_factory=_fake_bench_factory(opts))
    except C3profError as exc:
        print(f"c3prof capture: error: {exc}", file=sys.stderr)
        return exc.exit_code


# ------------------------------------------------------------------------------------------------
# The tests
# ------------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path, opts: dict, nproc: int = 2, timeout: int = 120):
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1",
           f"--master-port={_free_port()}", "--monitor-interval=0.2", str(Path(__file__)), "worker", json.dumps(opts)]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


def _files(tmp_path, ag="64KiB", other="128KiB"):
    (tmp_path / "scen.toml").write_text(SCENARIOS.format(ag=ag))
    (tmp_path / "scen_other.toml").write_text(SCENARIOS.format(ag=other))


BASE = ["--scenarios", "scen.toml", "--strategies", "base,dma", "--out", "cap.jsonl", "--reps", "4",
        "--max-reps", "8", "--warmup", "1", "--quiet", "--no-evidence", "--collective-timeout", "60"]


def test_two_ranks_write_self_describing_rank_traces(tmp_path):
    from c3prof.trace import read_trace

    _files(tmp_path)
    r = _launch(tmp_path, {"argv": BASE, "noisy_rank": 1})
    assert r.returncode == 0, r.stderr[-3000:]
    traces = [read_trace(tmp_path / f"cap.rank{i}.jsonl") for i in range(2)]
    ids = set()
    for i, t in enumerate(traces):
        assert t.header["rank"] == i and t.header["world_size"] == 2 and t.finished
        d = t.machine["distributed"]
        assert d["rank_files"] == ["cap.rank0.jsonl", "cap.rank1.jsonl"] and d["world_size"] == 2
        ids.add((d["capture_id"], d["plan_hash"]))
        # base (nccl) + dma (3 copy-engine collectives) per collective scenario, 4 phases each
        assert len(t.runs) == 2 * 4 and all(run.complete for run in t.runs.values())
        assert {run.variant for run in t.runs.values() if run.strategy == "dma"} == {"nccl_ce", "dma_push", "dma_pull"}
    assert len(ids) == 1, "both ranks must name the same capture and plan"
    # Agreed stopping: the quiet rank 0 would stop after 4 reps; noisy rank 1 keeps both going to max.
    for rid, run in traces[0].runs.items():
        for ph, phase in run.phases.items():
            assert len(phase.total_ms) == len(traces[1].runs[rid].phases[ph].total_ms), (rid, ph)
    assert any(len(p.total_ms) == 8 for run in traces[0].runs.values() for p in run.phases.values())


@pytest.mark.parametrize("carriers,skipped", [({"0": "sm", "1": "unknown"}, False), ({"0": "sm", "1": "sm"}, True)])
def test_engine_evidence_is_agreed_across_ranks(tmp_path, carriers, skipped):
    """Ranks that measure different carriers decide alike (here: a rank reading "sm" alone would
    skip the copy-engine runs the other rank runs, and the two would wait for each other)."""
    from c3prof.trace import read_trace

    _files(tmp_path)
    # A transfer scenario: its dma run asks for a copy engine, so evidence reading "sm" skips it.
    (tmp_path / "scen.toml").write_text('format = 1\n[[scenario]]\nname = "h2d"\n'
                                        'gemm = { m = 256, n = 256, k = 256, dtype = "bf16" }\n'
                                        'comm = { op = "transfer", bytes = "1MiB" }\n')
    argv = [a for a in BASE if a != "--no-evidence"]
    r = _launch(tmp_path, {"argv": argv, "evidence_by_rank": carriers})
    assert r.returncode == 0, r.stderr[-3000:]
    traces = [read_trace(tmp_path / f"cap.rank{i}.jsonl") for i in range(2)]
    for i, t in enumerate(traces):
        assert t.engine_evidence and all(e["carrier"] == carriers[str(i)] for e in t.engine_evidence)
        assert all(e["carrier_per_rank"] == [carriers["0"], carriers["1"]] for e in t.engine_evidence)
        assert all(e["carrier_agreed"] == ("sm" if skipped else "unknown") for e in t.engine_evidence)
        dma = [run for run in t.runs.values() if run.strategy == "dma"]
        not_applicable = [e["run"] for e in t.errors if e.get("not_applicable")]
        if skipped:       # skipped on every rank, with the reason, never measured
            assert not dma and not_applicable == ["h2d/dma/default"]
        else:
            assert dma and all(run.complete for run in dma) and not not_applicable
        assert all(run.complete for run in t.runs.values() if run.strategy == "base")
    assert {rid for rid, run in traces[0].runs.items() if run.complete} == \
        {rid for rid, run in traces[1].runs.items() if run.complete}


def test_report_takes_the_slowest_rank_per_repetition(tmp_path):
    import numpy as np

    from c3prof.analysis.dataset import load
    from c3prof.trace import read_trace

    _files(tmp_path)
    r = _launch(tmp_path, {"argv": BASE, "noisy_rank": 1})
    assert r.returncode == 0, r.stderr[-3000:]
    paths = [tmp_path / f"cap.rank{i}.jsonl" for i in range(2)]
    traces = [read_trace(p) for p in paths]
    ds = load([str(p) for p in paths])
    (group,) = ds.groups
    for rid, run in group.runs.items():
        for ph, series in run.phases.items():
            per_rank = [np.asarray(t.runs[rid].phases[ph].total_ms) for t in traces]
            assert np.array_equal(series["total_ms"], np.maximum(*per_rank)), (rid, ph)
            assert len(run.rank_medians[ph]) == 2


def test_mismatched_sizes_fail_on_every_rank(tmp_path):
    _files(tmp_path)
    r = _launch(tmp_path, {"argv": BASE, "mismatch_rank": 1})
    assert r.returncode != 0
    assert r.stderr.count("ranks disagree on the capture plan") >= 2, r.stderr[-3000:]
    assert not (tmp_path / "cap.rank0.jsonl").exists()


def test_a_rank_dying_stops_the_others_and_keeps_their_samples(tmp_path):
    from c3prof.trace import read_trace

    _files(tmp_path)
    # Every phase of every run of a scenario is measured in the same rounds and written when the
    # scenario ends: 4 runs x 4 phases = 16 units, each 1 warmup batch + 6 rounds of 1 batch (the
    # fakes are noiseless, so the sweep stops after the minimum 6 rounds) = 112 batches per
    # scenario. Rank 1 dies 30 batches into the second scenario: the first one is kept, whole.
    r = _launch(tmp_path, {"argv": BASE, "die_rank": 1, "die_after": 112 + 30}, timeout=90)
    assert r.returncode != 0
    t = read_trace(tmp_path / "cap.rank0.jsonl")           # readable: every line complete
    measured = sum(len(run.phases) for run in t.runs.values())
    assert measured == 16 and {run.scenario["name"] for run in t.runs.values()} == {"ag-x"}, measured
    assert t.ends and t.ends[-1]["status"] != "complete"
    assert "rank 0: stopped" in r.stderr or "rank 0: stopped because another rank failed" in r.stderr, r.stderr[-3000:]


def test_more_ranks_than_gpus_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    from c3prof.capture import distributed
    from c3prof.cli import main

    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(distributed, "visible_gpu_count", lambda backend: 1)
    for k, v in {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(k, v)
    assert main(["capture", *BASE]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 ranks on this node but 1 GPU(s) visible" in err[0]
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(k)
    assert main(["capture", "--gpus", "4", *BASE]) == 2
    assert "--gpus 4: only 1 GPU(s) visible" in capsys.readouterr().err


def test_spawn_command_and_rank_paths():
    from c3prof.capture.distributed import rank_path, spawn_command

    cmd = spawn_command(["capture", "--gpus", "8", "--suite", "llama70b", "--out", "x.jsonl"], 8)
    assert cmd[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=8", "-m"]
    assert cmd[6:] == ["c3prof", "capture", "--suite", "llama70b", "--out", "x.jsonl"]
    assert "--gpus" not in spawn_command(["capture", "--gpus=2", "--out", "y"], 2)
    assert rank_path("runs/x.jsonl", 3).as_posix() == "runs/x.rank3.jsonl"
    assert rank_path("runs/x", 0).as_posix() == "runs/x.rank0"


def test_agreement_helpers():
    from c3prof.capture.agreement import AgreedStoppingRule, agreed_done, check_agreement
    from c3prof.capture.stopping import StoppingRule
    from c3prof.errors import C3profError

    check_agreement(["a", "a"], "x")
    with pytest.raises(C3profError, match="ranks 0: .*ranks 1"):
        check_agreement(["a", "b"], "the plan")
    assert agreed_done([[("r", "gemm"), ("r", "comm")], [("r", "gemm")]]) == {("r", "gemm")}
    peers = {"reasons": [None, None]}
    rule = AgreedStoppingRule(StoppingRule(min_reps=2, max_reps=4), lambda local: [local, *peers["reasons"]])
    assert rule.stop_reason([1.0, 1.0], 0) is None              # peers not done yet
    peers["reasons"] = ["noise", "max_reps"]
    assert rule.stop_reason([1.0, 1.0], 0) == "noise"
    assert "agree" not in str(rule.describe())


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "worker":
    raise SystemExit(worker(sys.argv[2:]))
