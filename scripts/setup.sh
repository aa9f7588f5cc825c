#!/usr/bin/env bash
# Installs every Debian package gradckpt's build, tests, benchmarks and
# cross-builds need, and the Python packages of the tests into a virtual
# environment of their own. Idempotent; quiet when nothing is missing; works
# as root on a fresh machine (runs apt-get update itself when it must
# install). Any package that cannot be installed is an error (exit 1).
#   GCK_SETUP_CROSS=0  skip the aarch64/s390x cross toolchains and libraries
#   GCK_SETUP_PLOTS=1  also gnuplot (the demo's loss plot, benchmark plots)
#   GCK_VENV=DIR       the Python environment (default build/venv); its
#                      interpreter is DIR/bin/python, which scripts/test.sh
#                      gives CMake for the Python-based tests
#   GCK_VENV_EXTRA="P Q" more pip packages for that environment
#   GCK_SETUP_PYTHON=0 no Python environment (scripts/run.sh needs none)
set -euo pipefail
cd "$(dirname "$0")/.."

native=(cmake ninja-build gcc g++ pkg-config make
        libcmocka-dev libbenchmark-dev libsleef-dev libmpfr-dev libgmp-dev
        libxxhash-dev libzstd-dev libhtscodecs-dev libjansson-dev libopenblas-dev clang libclang-rt-14-dev
        python3 python3-venv python3-dev
        libopenmpi-dev openmpi-bin)
cross=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu gcc-s390x-linux-gnu qemu-user)
cross_arm64=(libcmocka-dev:arm64 libsleef-dev:arm64 libxxhash-dev:arm64 libjansson-dev:arm64 libzstd-dev:arm64 libhtscodecs-dev:arm64 libgomp1:arm64 libmpfr-dev:arm64
             libasan8:arm64 libubsan1:arm64)
cross_s390x=(libcmocka-dev:s390x libsleef-dev:s390x libxxhash-dev:s390x libjansson-dev:s390x libhtscodecs-dev:s390x libgomp1:s390x libmpfr-dev:s390x)

want=("${native[@]}")
# The demo's loss plot and the benchmark plots (scripts/run.sh, scripts/bench.sh);
# the tests do not need them.
if [ "${GCK_SETUP_PLOTS:-0}" = 1 ]; then
  want+=(gnuplot-nox)
fi
if [ "${GCK_SETUP_CROSS:-1}" = 1 ] && [ "$(uname -m)" = x86_64 ]; then
  want+=("${cross[@]}" "${cross_arm64[@]}" "${cross_s390x[@]}")
fi

# A plain name must be installed for this machine's architecture (or 'all'):
# an :arm64 copy of the same library does not count.
native_arch=$(dpkg --print-architecture)
is_installed() {
  case "$1" in
    *:*) dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null | grep -qx installed ;;
    *) dpkg-query -W -f='${db:Status-Status} ${Architecture}\n' "$1" 2>/dev/null \
         | grep -qE "^installed ($native_arch|all)\$" ;;
  esac
}
missing=()
for p in "${want[@]}"; do
  is_installed "$p" || missing+=("$p")
done

# ---- Python ------------------------------------------------------------------
# The one list of pip packages the tests need (tests/interop: the reference
# safetensors package, numpy, xxhash for the content ids); a stage that needs
# more (the Python bindings' tests) adds its own with GCK_VENV_EXTRA or a
# call of setup_venv with more names.
venv_packages=(numpy safetensors xxhash)
venv=${GCK_VENV:-build/venv}

# setup_venv [PKG...]: makes the environment (python3 -m venv) when there is
# none, then pip-installs venv_packages and PKG... unless they all import
# (a name's import is its pip name with '-' as '_'). Fails loudly.
setup_venv() {
  local want=("${venv_packages[@]}" "$@") mods=() p
  for p in "${want[@]}"; do mods+=("${p//-/_}"); done
  if [ ! -x "$venv/bin/python" ]; then
    echo "setup.sh: creating the Python environment $venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" || { echo "setup.sh: python3 -m venv $venv failed" >&2; return 1; }
  fi
  local imports
  imports=$(IFS=,; echo "${mods[*]}")
  "$venv/bin/python" -c "import $imports" 2>/dev/null && return 0
  echo "setup.sh: pip installing ${want[*]} into $venv"
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${want[@]}"; then
    echo "setup.sh: pip could not install ${want[*]} into $venv" >&2
    return 1
  fi
  "$venv/bin/python" -c "import $imports" || { echo "setup.sh: $imports do not import after pip install" >&2; return 1; }
}

python_setup() {
  [ "${GCK_SETUP_PYTHON:-1}" = 1 ] || return 0
  # shellcheck disable=SC2086
  setup_venv ${GCK_VENV_EXTRA:-}
}

if [ ${#missing[@]} -eq 0 ]; then
  python_setup
  exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup.sh: installing ${missing[*]}"
# Foreign architectures must be known to dpkg before apt can resolve :arm64/:s390x.
for a in arm64 s390x; do
  if printf '%s\n' "${missing[@]}" | grep -q ":$a\$" && ! dpkg --print-foreign-architectures | grep -qx "$a"; then
    $SUDO dpkg --add-architecture "$a"
  fi
done
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -q)
$SUDO apt-get "${apt_opts[@]}" update >/dev/null
$SUDO apt-get "${apt_opts[@]}" install -y "${missing[@]}" >/dev/null
python_setup
echo "setup.sh: done"
