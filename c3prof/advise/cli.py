"""``c3prof advise``: recommend a strategy and variant per scenario, from a model fitted on captures.

    c3prof advise [INPUT ...] --train TRACE [...] [--suite NAME] [--evaluate TRACE ...] [--no-loso]
                  [--json PATH|-] [--figures DIR] [--figure-formats LIST] [-q]

INPUT: scenario files (.toml), traces (.jsonl), report JSON or ingest JSON (c3prof.advise.inputs).
The model is fitted on the ``--train`` captures; leave-one-scenario-out validation on them runs
unless ``--no-loso``; ``--evaluate`` scores the advice on other captures (held out when their
scenario shapes are not in training: the output says which). GPU-free; bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import sys

from c3prof.analysis.stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from c3prof.errors import C3profError
from c3prof.figures.formats import PATTERNS as FIGURE_PATTERNS
from c3prof.figures.formats import add_argument as add_figure_formats

MAX_RESAMPLES = 100_000

EXAMPLES = """examples:
  c3prof advise --train tests/data/h200_default_1.jsonl tests/data/h200_default_2.jsonl --suite smoke
  c3prof advise out/ingest/ingest.json --train tests/data/h200_default_1.jsonl tests/data/h200_default_2.jsonl
  c3prof advise --train tests/data/h200_default_1.jsonl tests/data/h200_default_2.jsonl \\
      --evaluate tests/data/h200_heldout.jsonl --figures out/advise --json -
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXAMPLES
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="what to advise on (before --train): scenario file (.toml), trace (.jsonl), report or "
                             "ingest JSON (.json)")
    parser.add_argument("--train", nargs="+", required=True, metavar="TRACE",
                        help="captures (c3prof capture traces) to fit the model on; repeated captures pool")
    parser.add_argument("--suite", metavar="NAME", help="also advise on a built-in suite (c3prof suites)")
    parser.add_argument("--evaluate", nargs="+", metavar="TRACE",
                        help="score the advice on these captures (hit rate, loss, against oracle and fixed rules)")
    parser.add_argument("--no-loso", action="store_true", help="skip leave-one-scenario-out on the training captures")
    parser.add_argument("-o", "--json", "--out", dest="json", metavar="PATH", help="write JSON; '-' for stdout")
    parser.add_argument("--figures", metavar="DIR",
                        help="predicted vs measured T_cc figures (PNG; --figure-formats for more)")
    add_figure_formats(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print the tables")
    boot = parser.add_argument_group("measured intervals (the T_cc intervals that decide ties)")
    boot.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, metavar="LEVEL",
                      help="confidence level of the measured T_cc intervals")
    boot.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, metavar="N",
                      help=f"bootstrap resamples (100 to {MAX_RESAMPLES})")
    boot.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N", help="bootstrap seed")


def _bootstrap(args):
    from c3prof.analysis.speedup import BootstrapSettings

    if not 0 < args.confidence < 1:   # NaN fails this too
        raise C3profError(f"--confidence must be between 0 and 1, got {args.confidence}")
    if not 100 <= args.resamples <= MAX_RESAMPLES:
        raise C3profError(f"--resamples must be between 100 and {MAX_RESAMPLES}, got {args.resamples}")
    if not 0 <= args.seed < 2**63:
        raise C3profError(f"--seed must be in [0, 2^63), got {args.seed}")
    return BootstrapSettings(n_resamples=args.resamples, confidence=args.confidence, seed=args.seed)


def _outputs(args):
    from c3prof.outputs import Output

    outs = []
    if args.json and args.json != "-":
        outs.append(Output.file("--json", args.json))
    if args.figures:
        outs.append(Output.directory("--figures", args.figures, tuple(f"advise_{p}" for p in FIGURE_PATTERNS)))
    return outs


def _document(args) -> dict:
    from c3prof.advise.data import measured_set
    from c3prof.advise.evaluate import held_out, loso
    from c3prof.advise.fit import fit
    from c3prof.advise.inputs import targets
    from c3prof.advise.predict import advise
    from c3prof.advise.report import advice_json, build, validation_json
    from c3prof.console import Status

    boot = _bootstrap(args)
    for flag, paths in (("--train", args.train), ("--evaluate", args.evaluate or [])):
        odd = [p for p in paths if p.endswith((".toml", ".json"))]
        if odd:   # nargs="+" takes what follows it: an INPUT written after --train lands here
            raise C3profError(f"{flag} takes captures (.jsonl), not {odd[0]}: give INPUT files before {flag}")
    # A spinner line at a terminal: validating on ten captures takes a while (nothing off a terminal).
    with Status(f"advise: reading {len(args.train)} training capture(s)", quiet=args.quiet) as status:
        train = measured_set(args.train, boot)
        status.update("advise: fitting the model")
        model = fit(train.scenarios)
        notes: list[str] = []
        advice = [advice_json(model, t, advise(model, t.inputs))
                  for t in targets(args.inputs, args.suite, model.rates, notes)]
        validations = []
        if not args.no_loso:
            def fold(done: int, total: int) -> None:
                status.update(f"advise: leave-one-scenario-out, scenario {done + 1} of {total}")
            validations.append(validation_json(loso(train.scenarios, fold), "loso", train.sources))
        if args.evaluate:
            status.update(f"advise: scoring on {len(args.evaluate)} evaluation capture(s)")
            ev = measured_set(args.evaluate, boot)
            notes += [f"--evaluate: {n}" for n in ev.notes]
            if ev.platform != train.platform:
                notes.append(f"evaluated on {ev.platform}, trained on {train.platform}")
            validations.append(validation_json(held_out(model, ev.scenarios), "evaluate", ev.sources))
    if not advice and not validations:
        raise C3profError("nothing to do: give INPUT, --suite or --evaluate (or drop --no-loso)")
    return build(train, model, advice, validations, notes)


def run(args) -> int:
    import json

    from c3prof.analysis.dataset import expand_paths
    from c3prof.outputs import atomic_directory, check_outputs, in_write_order, print_written, write_text_atomic

    traces = expand_paths([*args.train, *(args.evaluate or [])])
    outputs = check_outputs([*traces, *args.inputs], _outputs(args))
    doc = _document(args)
    text = json.dumps(doc, indent=1, allow_nan=False, default=str)
    written = []
    # A directory first: replacing it as a whole would drop a JSON written into it before.
    for out in in_write_order(outputs):
        if out.flag == "--json":
            write_text_atomic(out.path, text + "\n", "advise JSON")
        else:
            from c3prof.figures.advise import write

            with atomic_directory(out, "advise figures") as tmp:
                drawn = [str(out.path / p.name) for p in write(doc, str(tmp), args.figure_formats)]
            if not drawn:
                print(f"c3prof advise: note: {out.path} is empty: the figures plot validations, and there is "
                      "none (give --evaluate, or drop --no-loso)", file=sys.stderr)
            written += drawn
            continue
        written.append(str(out.path))
    if args.json == "-":
        print(text)
    elif not args.quiet:
        from c3prof.advise.render import render
        from c3prof.console import text_width

        print(render(doc, text_width()))
    print_written("advise", written, to_stderr=args.json == "-")
    return 0
