#!/usr/bin/env bash
# The whole test suite: installs missing packages, builds, runs every test,
# then installs the library into build/install and builds a small outside
# project against it with find_package (examples/consumer).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)")
if [ ! -d ../shared/data ]; then
  echo "note: ../shared/data is absent: the real-data cases in these suites were skipped (each says so with -s):"
  grep -l RG_SHARED_DATA_DIR tests/test_*.cpp | sed 's/^/      /'
fi

echo "== consumer: find_package(rmsgrad) against the installed tree"
rm -rf build/install build/consumer
cmake --install build --prefix build/install >/dev/null
cmake -S examples/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/consumer -j"$(nproc)" >/dev/null
build/consumer/consumer
# A model of one's own with the drivers' training loop: it must learn the
# spirals (validation error below 10% at its best checkpoint).
build/consumer/own_model --out build/consumer/spirals --steps 600 --threads 2 > build/consumer/own_model.log
tail -1 build/consumer/own_model.log
best_error=$(grep -o '"error_pct":[0-9.e+-]*' build/consumer/spirals/metrics.jsonl | cut -d: -f2 | sort -g | head -1)
awk -v e="$best_error" 'BEGIN { if (e + 0 >= 10) { print "own_model: best validation error " e "% is not below 10%"; exit 1 } }'
