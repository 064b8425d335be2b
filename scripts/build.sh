#!/usr/bin/env bash
# Configures and builds into build/ (Release, tests and benchmarks included).
# Usage: scripts/build.sh [target ...]
# One build at a time: sweeps started side by side each call this first, and
# two cmake runs in one build folder at once break each other.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
mkdir -p build
exec 9>build/.build.lock
flock 9
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j"$(nproc)" --target "$@"
else
  cmake --build build -j"$(nproc)"
fi
