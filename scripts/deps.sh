#!/usr/bin/env bash
# Installs the Debian packages the build needs, if any are missing.
# Usage: scripts/deps.sh [extra-package ...]
set -euo pipefail
packages=(cmake g++ make pkg-config libopenblas-dev libopenblas-openmp-dev libfmt-dev doctest-dev libstb-dev
          libpng-dev libturbojpeg0-dev
          nlohmann-json3-dev libcli11-dev zlib1g-dev libsentencepiece-dev libarchive-dev libdnnl-dev ocl-icd-opencl-dev
          libopenmpi-dev openmpi-bin clang libclang-rt-14-dev libomp-dev strace python3 "$@")   # libpng, libturbojpeg: CIFAR-10 images (experiments/cifar10/image_decode.cpp); libdnnl-dev: oneDNN's matrix products (core/gemm.h), whose CMake package asks for OpenCL (ocl-icd-opencl-dev, only a recommendation of libdnnl-dev); OpenMPI: data-parallel training (dist/); clang, libclang-rt, libomp: the fuzz build (scripts/fuzz.sh); strace: tests/kill_resume.sh; python3: the checks of the tour and of the layering
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing missing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
