#!/usr/bin/env bash
# tools/deps.sh: installs the Debian packages the harness builds and tests with, only those
# missing (apt-get as root, or through sudo). Sourced or run by quickstart.sh and test.sh.
set -euo pipefail

HARNESS_PACKAGES=(
  build-essential cmake pkg-config git
  libsqlite3-dev libjansson-dev libcmocka-dev libopenblas-openmp-dev libdnnl-dev libssl-dev libcurl4-openssl-dev libonig-dev libutf8proc-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
  gnuplot-nox libxml2-utils
  python3-venv sqlite3  # tools/pyenv.sh (the optional PyTorch test) and test_exec_cli.sh's raw-log checks
  # data-parallel runs (docs/ranks.md): Open MPI with PMIx, and a one-node Slurm for test_slurm.sh
  openmpi-bin libopenmpi-dev libpmix-dev slurm-wlm munge
)

missing=()
for p in "${HARNESS_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "deps: all ${#HARNESS_PACKAGES[@]} packages present"
fi
