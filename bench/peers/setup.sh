#!/usr/bin/env bash
# Installs the optional PyTorch peer (Debian's python3-torch) with an optimized BLAS: without
# libopenblas0-pthread, Debian's torch runs its GEMMs on the reference BLAS (~6 GFLOP/s here).
set -euo pipefail
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-torch libopenblas0-pthread
