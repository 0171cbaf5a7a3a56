"""`c3prof suites`: list built-in scenario suites and what they contain.

A suite that cannot be read is reported on its own line (stderr, exit status 2) while the others
are still listed, so one broken file does not hide the rest.
"""

import sys
import textwrap

from c3prof.errors import ScenarioError
from c3prof.scenarios import load_suite, suite_description, suite_names

EXAMPLES = """examples:
  c3prof suites              list the suites
  c3prof suites smoke        the scenarios of one suite
"""


def add_arguments(parser):
    parser.epilog = EXAMPLES
    parser.add_argument("name", nargs="?", metavar="SUITE", help="show the scenarios of one suite")


def run(args) -> int:
    if args.name:
        for s in load_suite(args.name):
            print(f"{s.name:28s} gemm {s.gemm.label:28s} comm {s.comm.label}")
        return 0
    status = 0
    from c3prof.console import text_width   # here: rich is not imported for every command's --help

    width = text_width()
    for name in suite_names():
        try:
            head = f"{name:12s} {len(load_suite(name)):3d} scenarios  "
            # The suite files' descriptions are wrapped by hand at various widths: one paragraph again.
            text = " ".join(suite_description(name).split())
        except ScenarioError as exc:
            print(f"c3prof suites: error: {exc}", file=sys.stderr)
            status = 2
            continue
        # (fill gives "" for an empty description, head and all)
        print(textwrap.fill(text, width, initial_indent=head, subsequent_indent=" " * len(head)) or head.rstrip())
    return status
