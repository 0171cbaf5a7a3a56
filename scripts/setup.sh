#!/usr/bin/env bash
# Create .venv and install c3prof into it (editable), building the Cython extensions.
#   bash scripts/setup.sh            # report, ingest and tests (no torch): any machine
#   bash scripts/setup.sh capture    # plus torch, NVML and cuda-bindings for `c3prof capture`
#   C3PROF_BUILD_HIP=1 bash scripts/setup.sh   # plus AMD's HIP bindings and the HIP backend's extensions
#                                    # (needs the HIP headers: docs/backends.md); CI sets it
# The venv sees system site-packages, so a torch that is already installed is reused, not
# downloaded again. Needs Python >= 3.11 and a C++ compiler; the CUDA headers come from pip wheels.
#
# Reinstalls only when the build inputs changed: a stamp in .venv holds a hash of pyproject.toml,
# setup.py and the Cython sources (plus the extras asked for). Python sources need no reinstall
# (the install is editable).
#
# Without a reachable package index (a GPU node whose image already has the dependencies), it
# builds against the installed packages instead (pip install --no-build-isolation --no-deps -e .)
# and says so; it checks the index first (5 s) rather than waiting for pip's timeouts.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { echo "scripts/setup.sh: $*" >&2; }

extras=dev
checks="import c3prof.ingest._kineto, c3prof.analysis._bootstrap"
if [ "${1:-}" = capture ]; then
  extras=capture,dev
  checks="$checks, c3prof.backends.cuda.runtime"
fi
if [ "${C3PROF_BUILD_HIP:-}" = 1 ]; then
  extras=$extras,hip
  checks="$checks, c3prof.backends.hip.runtime"
fi

build_inputs_hash() {
  { echo "extras=$extras hip=${C3PROF_BUILD_HIP:-}"; cat pyproject.toml setup.py build_backend/*.py;
    find c3prof -name '*.pyx' -o -name '*.pxd' -o -name '*.pyi' | LC_ALL=C sort | xargs cat; } | sha256sum | cut -d' ' -f1
}

if [ ! -x .venv/bin/python ]; then
  say "creating .venv (Python: $("$PY" --version 2>&1))"
  "$PY" -m venv --system-site-packages .venv
  # --system-site-packages reaches the base interpreter's packages only. When python3 is itself a
  # virtual environment (GPU images often ship torch in one, e.g. /opt/torch/.venv), its packages
  # would be invisible: a .pth file adds its site-packages after .venv's own.
  parent_site=$("$PY" -c 'import site, sys; print("\n".join(site.getsitepackages()) if sys.prefix != sys.base_prefix else "")')
  if [ -n "$parent_site" ]; then
    venv_site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$parent_site" > "$venv_site/zz_c3prof_parent_env.pth"
    say "python3 is a virtual environment: its packages stay visible in .venv ($venv_site/zz_c3prof_parent_env.pth)"
  fi
fi
stamp=.venv/.c3prof-build-stamp
want=$(build_inputs_hash)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && .venv/bin/python -c "$checks" 2>/dev/null; then
  say "c3prof in .venv is up to date (sources unchanged since the last build)"
  exit 0
fi

log=.venv/c3prof-install.log
install_from_registry() { .venv/bin/python -m pip install --timeout 20 --retries 1 -e ".[$extras]" >"$log" 2>&1; }
install_against_installed() { .venv/bin/python -m pip install --no-build-isolation --no-deps --no-index -e . >"$log" 2>&1; }
give_up() {
  tail -n 15 "$log" >&2
  say "install numpy, scipy, matplotlib, rich, pytest, hypothesis, setuptools>=77, Cython>=3.1 and"
  say "cuda-bindings/nvidia-cuda-runtime/nvidia-cuda-crt 13.0 first (pyproject.toml lists them)"
  exit 1
}
# Ask the package index first (5 s): on a node without one, pip's own attempt would spend its
# timeouts on every build requirement before failing.
index_url=${PIP_INDEX_URL:-$(.venv/bin/python -m pip config get global.index-url 2>/dev/null || true)}
index_url=${index_url:-https://pypi.org/simple/}
if .venv/bin/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$index_url" 2>/dev/null; then
  say "installing c3prof[$extras] into .venv and building its Cython extensions (first time: 1-3 minutes; log: $log)..."
  if ! install_from_registry; then
    say "the normal install failed: last lines of $log:"
    tail -n 5 "$log" >&2
    say "building against the packages already installed: pip install --no-build-isolation --no-deps -e ."
    install_against_installed || { say "that failed too:"; give_up; }
  fi
else
  say "no package index reachable ($index_url): building c3prof against the packages already installed"
  say "(pip install --no-build-isolation --no-deps -e .; log: $log)..."
  if ! install_against_installed; then
    say "that failed; trying the package index anyway (--timeout 20)..."
    install_from_registry || { say "that failed too:"; give_up; }
  fi
fi
.venv/bin/python -c "$checks" || { say "c3prof does not import after the install"; exit 1; }
echo "$want" > "$stamp"
say "c3prof installed in .venv"
