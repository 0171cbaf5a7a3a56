"""Helpers of the tests that read a trace two ways (tests/test_trace_parts.py, tests/test_read_ahead.py)."""

from __future__ import annotations

from c3prof import trace


def trace_contents(t: trace.Trace) -> list:
    """Everything read_trace gives, in order, with the samples as lists (arrays compare elementwise)."""
    runs = [(rid, r.scenario, r.strategy, r.variant, r.params, r.source, r.validations, r.counters, r.errors,
             [(key, p.name, list(p.samples), [v.tolist() for v in p.samples.values()], p.stop,
               {k: v for k, v in p.record.items() if k != "samples"}) for key, p in r.phases.items()])
            for rid, r in t.runs.items()]
    return [t.path, t.header, t.machines, t.ceilings, t.engine_evidence, t.counter_sources, t.ends, t.errors,
            t.orphans, runs]
