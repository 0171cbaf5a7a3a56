"""Accepting a well-formed phase record with few Python operations: read_trace's fast path.

A large trace is almost all ``phase`` records (10^6 samples make 40,000 of them), and checking each
with the general rules (trace.validate_record: a loop over the required fields, the run identity
keyed by four reprs) was most of reading it. ``PlainPhases.accept`` tests the same rules on the
record's structure in a handful of C-speed calls. It only ever says "valid" or "not sure": a record
it does not accept goes through validate_record as before, which accepts it or raises the error the
reader has always reported. It is a shortcut to the same result, never a second set of rules:
everything it accepts, validate_record accepts too (tests/test_trace_fast.py checks both ways).

It is used only on records whose text is simple and plain (trace._text_kind: integers within 64
bits, no escapes, no overflowing number, shallow nesting), so the walk over every value that
validate_record skips for such text is skipped here too, and orjson can key a scenario by its exact
JSON (1, 1.0 and true stay apart, as the reprs of validate_record's identity cache keep them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from c3prof.errors import TraceError

if TYPE_CHECKING:
    from c3prof.trace_samples import Samples

# The required phase fields (trace._REQUIRED["phase"]) and the exact type of each: JSON parsers make
# no subclasses, so an exact type is what isinstance would accept, bools aside (none required here).
PHASE_FIELDS = ("run", "scenario", "strategy", "variant", "params", "phase", "samples", "stop")
PHASE_FIELD_TYPES = [str, dict, str, str, dict, str, dict, dict]
# The optional fields (trace._OPTIONAL["phase"]): absent or null, or of their type (visit an int,
# not a bool).
_OPTIONAL = ("rounds", "round_group", "visit")
_OPTIONAL_TYPES = {(r, g, v) for r in (type(None), list) for g in (type(None), str) for v in (type(None), int)}
_INT_ONLY = {int}
_MAX_IDENTITIES = 4096
# The string fields that a run's phases (and a scenario's runs) repeat: kept once, like the dicts.
SHARED_NAMES = ("run", "strategy", "variant", "phase", "round_group")


@dataclass(frozen=True)
class PhaseRules:
    """What validate_record requires of a phase record, from c3prof.trace (which imports this module,
    so the rules come in rather than being imported: one definition of each)."""

    phases: tuple[str, ...]
    series: tuple[str, ...]
    max_visits: int
    max_round: int
    # validate_record's check of a run identity (the record, its scenario's exact JSON): TraceError if bad
    check_identity: Callable[[dict, bytes], None]
    dumps: Callable[[Any], bytes]            # orjson.dumps: a value's exact JSON


class PlainPhases:
    """Accepts phase records that validate_record would accept. A run identity (scenario, strategy,
    variant, run id) is checked by validate_record's own function the first time, and then
    recognized by its exact JSON: a run's phases repeat it."""

    def __init__(self, batch: Samples, rules: PhaseRules) -> None:
        self._batch = batch
        self._rules = rules
        self._dumps = rules.dumps
        self._identities: set[tuple[str, str, str, bytes]] = set()
        self._shared: dict[bytes, dict] = {}   # JSON text -> the first dict read with it
        self._names: dict[str, str] = {}        # a name -> the first string read with it
        self._rounds: dict[tuple, list] = {}    # a list of rounds -> the first list read with it

    def accept(self, rec: dict) -> bool:
        """True: ``rec`` is a valid phase record, its samples now in the batch. False: not sure
        (nothing taken); the caller runs validate_record."""
        if rec.get("record") != "phase" or list(map(type, map(rec.get, PHASE_FIELDS))) != PHASE_FIELD_TYPES:
            return False
        rounds, _, visit = optional = tuple(map(rec.get, _OPTIONAL))
        rules = self._rules
        if tuple(map(type, optional)) not in _OPTIONAL_TYPES or rec["phase"] not in rules.phases:
            return False
        if visit is not None and not 1 <= visit <= rules.max_visits:
            return False
        samples = rec["samples"]
        total = samples.get("total_ms")
        if type(total) is not list or not total:
            return False
        n = len(total)
        if rounds is not None and not (len(rounds) == n and set(map(type, rounds)) == _INT_ONLY
                                       and min(rounds) >= 0 and max(rounds) <= rules.max_round):
            return False
        identity = (rec["run"], rec["strategy"], rec["variant"], self._dumps(rec["scenario"]))
        if identity not in self._identities and not self._valid_identity(rec, identity):
            return False
        if not self._batch.add(samples, n, rules.series):   # last check: it takes the samples when it says True
            return False
        # A run's phases (and a scenario's runs) repeat these dicts: keep one of each (same JSON, so the
        # same values and types), not one per record (a third of the memory of a read trace). Their
        # names and lists of rounds likewise: the part a child read (trace_parts.py) then crosses as
        # references to one object each (11 MB and 0.03 s to pickle, against 13.5 MB and 0.09 s, for
        # 55% of 10^6 samples; dev VM).
        rec["scenario"] = self._shared.setdefault(identity[3], rec["scenario"])
        for name in ("params", "stop"):
            rec[name] = self._shared.setdefault(self._dumps(rec[name]), rec[name])
        for name in SHARED_NAMES:
            value = rec.get(name)
            if value is not None:
                rec[name] = self._names.setdefault(value, value)
        if rounds is not None:
            rec["rounds"] = self._rounds.setdefault(tuple(rounds), rounds)
        return True

    def _valid_identity(self, rec: dict, identity: tuple) -> bool:
        return remember_identity(self._identities, self._rules.check_identity, rec, identity)


def remember_identity(identities: set, check_identity: Callable[[dict, bytes], None], rec: dict,
                      identity: tuple) -> bool:
    """validate_record's own check (``check_identity``) of a run identity not seen yet: True, and
    remembered in ``identities``, when valid (also for _trace_read.PhaseAcceptor)."""
    try:
        check_identity(rec, identity[3])
    except TraceError:
        return False
    if len(identities) >= _MAX_IDENTITIES:   # bounded: a trace may hold many runs
        identities.clear()
    identities.add(identity)
    return True
