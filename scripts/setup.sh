#!/usr/bin/env bash
# Installs what vtrn needs on a fresh Debian machine and does nothing where it is present:
# Debian packages (compiler cache, GoogleTest, JSON, OpenBLAS, oneDNN, SLEEF), then the Python
# packages, torch==2.13.0 (the CPU wheel) among them. The build itself is the Makefile's
# `install` target.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

APT_PACKAGES=(g++ make ccache clang-format libgtest-dev nlohmann-json3-dev libopenblas-dev patch
  libdnnl-dev libsleef-dev)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# torch is pinned exactly: anything looser makes pip fetch a multi-GB CUDA build. It is
# installed on its own first, so that nothing else can pull in another torch.
if ! "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(m.version('torch') != '2.13.0')" 2>/dev/null \
   && ! "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(not m.version('torch').startswith('2.13.0+'))" 2>/dev/null; then
  echo "setup: installing torch==2.13.0"
  "$PYTHON" -m pip install --quiet torch==2.13.0
fi
"$PYTHON" -m pip install --quiet -r requirements-dev.txt
# Packages whose metadata names torch go in without their dependencies (those are listed in
# requirements-dev.txt), so that nothing replaces torch==2.13.0; then torchtitan's patch.
"$PYTHON" -m pip install --quiet --no-deps -r requirements-torch-nodeps.txt
PYTHON="$PYTHON" examples/torchtitan/apply_patch.sh
