#!/usr/bin/env bash
# Create .venv and install c3prof into it (editable), building the Cython extensions.
#   bash scripts/setup.sh            # report, ingest and tests (no torch): any machine
#   bash scripts/setup.sh capture    # plus torch and NVML for `c3prof capture` on a GPU machine
# The venv sees system site-packages, so a torch that is already installed is reused, not
# downloaded again. Needs Python >= 3.11 and a C++ compiler; the CUDA headers come from pip wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv --system-site-packages .venv
fi
extras=dev
[ "${1:-}" = capture ] && extras=capture,dev
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[$extras]"
.venv/bin/python -c "import c3prof._dma, c3prof.ingest._kineto; print('c3prof installed in .venv')"
