#!/usr/bin/env bash
# The Python stage of scripts/test.sh: a virtual environment with the test
# packages, `pip install ./python` (which builds the C library into the
# extension), then pytest on tests/python/ (the package against NumPy, torch
# and safetensors, and the kill-and-resume test of examples/python/train_torch.py).
#   GCK_VENV=dir        the virtual environment (created or extended; default $GCK_BUILD_ROOT/venv)
#   GCK_BUILD_ROOT=dir  where builds go (default build/)
#   GCK_PYTEST_ARGS     extra pytest arguments (e.g. "-k clip -x")
# Needs python3-venv and python3-dev (scripts/setup.sh installs them) and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${GCK_BUILD_ROOT:-build}
venv=$(realpath -m "${GCK_VENV:-$root/venv}")
# The one list of what the tests need from PyPI (torch from PyPI is ~5 GB
# installed, about 2 minutes here; ml_dtypes gives NumPy its bfloat16).
packages=(numpy torch pytest safetensors ml_dtypes)

# Debian's interpreter: its python3-dev headers match it (an interpreter
# earlier on PATH, e.g. pyenv's, may lack them).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)

if [ ! -x "$venv/bin/python" ]; then
  echo "==> [python] creating $venv"
  mkdir -p "$(dirname "$venv")"
  "$py" -m venv "$venv"
fi
missing=()
for p in "${packages[@]}"; do
  "$venv/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$p') is None)" \
    2>/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  avail_kb=$(df -Pk "$venv" | awk 'NR == 2 { print $4 }')
  if [ "$avail_kb" -lt $((8 * 1024 * 1024)) ]; then
    echo "test_python.sh: less than 8 GB free for $venv (torch alone takes ~5 GB)" >&2
    exit 1
  fi
  echo "==> [python] pip install ${missing[*]}"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${missing[@]}"
fi

echo "==> [python] pip install ./python"
log=$root/python-install.log
mkdir -p "$root"
"$venv/bin/pip" install --disable-pip-version-check --force-reinstall --no-deps ./python >"$log" 2>&1 \
  || { tail -40 "$log"; echo "test_python.sh: pip install ./python failed (log: $log)" >&2; exit 1; }

echo "==> [python] pytest tests/python"
# Run from the tests' folder so that the installed package, not ./python, is imported.
# shellcheck disable=SC2086  # GCK_PYTEST_ARGS is a list of arguments
(cd tests/python && "$venv/bin/python" -m pytest -q -p no:cacheprovider ${GCK_PYTEST_ARGS:-} .)
