"""``--figure-formats``, the same option in ``report``, ``ingest`` and ``advise`` (no matplotlib import here).

PNG is the default: each further format is a full draw of every figure, and a PDF costs two to
three times a PNG (font subsetting with fontTools dominates), so it is written only on request.
"""

from __future__ import annotations

import argparse

FORMATS = ("png", "pdf", "svg")
DEFAULT = ("png",)
PATTERNS = tuple(f"*.{f}" for f in FORMATS)  # every file a figures directory may hold (a re-run replaces these)
HELP = "comma-separated formats of the figures: png, pdf, svg (each one is a full draw; pdf costs 2-3x a png)"


def parse(text: str) -> tuple[str, ...]:
    """``"png,pdf"`` -> ``("png", "pdf")``, duplicates dropped, order kept; anything else is refused
    (argparse reports the refusal as ``argument --figure-formats: ...``, one line, exit status 2)."""
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise argparse.ArgumentTypeError(f"{', '.join(bad) or 'nothing'} is not one of {', '.join(FORMATS)}")
    return formats


def add_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The ``--figure-formats LIST`` option, a tuple of formats once parsed (argparse applies ``parse``
    to the default too), refused while the arguments are parsed: before any work."""
    parser.add_argument("--figure-formats", type=parse, default=",".join(DEFAULT), metavar="LIST", help=HELP)
