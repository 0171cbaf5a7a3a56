#!/usr/bin/env bash
# Set up .venv (if needed) and run the test suite. GPU tests (marked gpu/multigpu) skip cleanly
# where no GPU is usable. pytest's exit code 5 (no tests collected) is treated as a failure:
# a run that tested nothing must not pass.
#
# C3PROF_PYTHON=/path/to/python tests an installation made elsewhere instead of .venv (CI installs
# the built sdist into a fresh venv and sets it): no setup, and the package is imported from that
# installation, never from this source tree (PYTHONSAFEPATH: the current directory is not put on
# sys.path, here or in the subprocesses the tests start).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -n "${C3PROF_PYTHON:-}" ]; then
  PY=$C3PROF_PYTHON
  export PYTHONSAFEPATH=1
  where=$("$PY" -c "import c3prof, c3prof.ingest._kineto as k; print(k.__file__)") || exit 1
  case $where in
    "$PWD"/*) echo "scripts/test.sh: c3prof is imported from this tree ($where), not from the installation" >&2; exit 1 ;;
  esac
  echo "scripts/test.sh: testing the c3prof installed at ${where%/c3prof/*}" >&2
else
  bash scripts/setup.sh || exit 1
  PY=.venv/bin/python
fi
"$PY" -m pytest -q tests "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit $rc
