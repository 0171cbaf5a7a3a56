#!/usr/bin/env bash
# Set up .venv (if needed) and run the test suite. GPU tests (marked gpu/multigpu) skip cleanly
# where no GPU is usable. pytest's exit code 5 (no tests collected) is treated as a failure:
# a run that tested nothing must not pass.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
.venv/bin/python -m pytest -q tests "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit $rc
