"""`c3prof suites`: list built-in scenario suites and what they contain."""

from c3prof.scenarios import load_suite, suite_description, suite_names


def add_arguments(parser):
    parser.add_argument("name", nargs="?", help="show the scenarios of one suite")


def run(args) -> int:
    if args.name:
        for s in load_suite(args.name):
            print(f"{s.name:28s} gemm {s.gemm.label:28s} comm {s.comm.label}")
        return 0
    for name in suite_names():
        print(f"{name:12s} {len(load_suite(name)):3d} scenarios  {suite_description(name)}")
    return 0
