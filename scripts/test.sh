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

echo "== consumer: find_package(rmsgrad) against the installed tree, moved to another prefix"
rm -rf build/install build/install-moved build/consumer build/lab build/lab-bench
cmake --install build --prefix build/install >/dev/null
# The package must be relocatable: it is used from a copy in another prefix,
# with the original gone, and names no path of this build.
cp -r build/install build/install-moved && rm -rf build/install
if grep -rn "$PWD" build/install-moved/lib/cmake/rmsgrad; then
  echo "the installed CMake package names paths of the build tree"; exit 1
fi
cmake -S examples/consumer -B build/consumer -DCMAKE_PREFIX_PATH="$PWD/build/install-moved" >/dev/null
cmake --build build/consumer -j"$(nproc)" >/dev/null
build/consumer/consumer
# A model of one's own with the drivers' training loop: it must learn the
# spirals (validation error below 10% at its best checkpoint).
build/consumer/own_model --out build/consumer/spirals --steps 600 --threads 2 > build/consumer/own_model.log
tail -1 build/consumer/own_model.log
best_error=$(grep -o '"error_pct":[0-9.e+-]*' build/consumer/spirals/metrics.jsonl | cut -d: -f2 | sort -g | head -1)
awk -v e="$best_error" 'BEGIN { if (e + 0 >= 10) { print "own_model: best validation error " e "% is not below 10%"; exit 1 } }'

# The lab builds on the package as any user's project would: the experiment
# drivers configured and built from experiments/ alone against the installed
# copy, and one of them run.
echo "== the lab (experiments/) built against the installed package"
cmake -S experiments -B build/lab -DCMAKE_PREFIX_PATH="$PWD/build/install-moved" >/dev/null
cmake --build build/lab -j"$(nproc)" >/dev/null
build/lab/bin/cifar10 --width 0.125 --steps 4 --train-size 40 --valid-size 20 --batch 10 --threads 1 \
  --out build/lab/run --overwrite > build/lab/cifar10.log
echo "lab: $(ls build/lab/bin | wc -l) programs built against the package; cifar10 trained: $(tail -1 build/lab/cifar10.log)"
# The benchmarks too: bench/ alone against the package, with the lab's
# libraries built beside them, and one model step timed.
echo "== the benchmarks (bench/) built against the installed package"
cmake -S bench -B build/lab-bench -DCMAKE_PREFIX_PATH="$PWD/build/install-moved" >/dev/null
cmake --build build/lab-bench -j"$(nproc)" >/dev/null
echo "bench: $(ls build/lab-bench/bin | wc -l) programs built against the package; one step: $(build/lab-bench/bin/bench_step \
  --model lm --set batch=4 --threads 1 --warmup 0 --steps 1 | grep -o '"ms_per_step": [0-9.]*')"

# The MNIST MLP: trains and saves; a second program loads the file and must
# find the same test accuracy, at least 97.5% on real MNIST (or 90% on the
# synthetic stand-in used when ../shared/data is absent).
mnist=../shared/data/mnist
build/consumer/mnist_mlp "$mnist" build/consumer/mnist_mlp.safetensors > build/consumer/mnist_mlp.log
build/consumer/mnist_eval "$mnist" build/consumer/mnist_mlp.safetensors > build/consumer/mnist_eval.log
tail -1 build/consumer/mnist_mlp.log
tail -1 build/consumer/mnist_eval.log
trained=$(grep -o 'final test accuracy [0-9.]*' build/consumer/mnist_mlp.log | awk '{print $4}')
loaded=$(grep -o 'test accuracy [0-9.]*' build/consumer/mnist_eval.log | awk '{print $3}')
[ -n "$trained" ] && [ "$trained" = "$loaded" ] || { echo "mnist_eval found ${loaded:-nothing}%, mnist_mlp ${trained:-nothing}%"; exit 1; }
floor=90; [ -f "$mnist/t10k-images-idx3-ubyte.gz" ] && floor=97.5
awk -v a="$trained" -v f="$floor" 'BEGIN { if (a + 0 < f) { print "mnist_mlp: test accuracy " a "% is below " f "%"; exit 1 } }'

# A CNN fed by a DataLoader, saved with metadata and reloaded: one epoch on
# the 17,435 training images reached 97.1% here; it must reach 96% on real
# MNIST (90% on the stand-in), and the reloaded model must score the same
# (the program checks that).
build/consumer/mnist_cnn "$mnist" build/consumer/mnist_cnn.safetensors > build/consumer/mnist_cnn.log
tail -1 build/consumer/mnist_cnn.log
cnn=$(grep -o 'final test accuracy [0-9.]*' build/consumer/mnist_cnn.log | awk '{print $4}')
floor=90; [ -f "$mnist/t10k-images-idx3-ubyte.gz" ] && floor=96
awk -v a="$cnn" -v f="$floor" 'BEGIN { if (a + 0 < f) { print "mnist_cnn: test accuracy " a "% is below " f "%"; exit 1 } }'

# The op written in docs/writing_an_op.md, against the installed package.
build/consumer/custom_op > build/consumer/custom_op.log || { cat build/consumer/custom_op.log; exit 1; }
echo "custom_op: $(grep -c ' ok$' build/consumer/custom_op.log) checks ok"

# A decoder-only character Transformer of one's own (causal pre-norm layers,
# sampled through their caches): its loss must fall below 75% of its first
# value in 300 steps on this README (the program checks it).
build/consumer/char_decoder README.md 300 > build/consumer/char_decoder.log || { cat build/consumer/char_decoder.log; exit 1; }
tail -2 build/consumer/char_decoder.log

# The character GRU on this README: 100 steps straight, and 60 steps then a
# resumed run to 100, must end on the same loss, bit for bit (one thread).
rm -f build/consumer/char_gru_*.safetensors
OMP_NUM_THREADS=1 build/consumer/char_gru README.md build/consumer/char_gru_straight.safetensors 100 > build/consumer/char_gru_straight.log
OMP_NUM_THREADS=1 build/consumer/char_gru README.md build/consumer/char_gru_resumed.safetensors 60 0 > /dev/null
OMP_NUM_THREADS=1 build/consumer/char_gru README.md build/consumer/char_gru_resumed.safetensors 100 > build/consumer/char_gru_resumed.log
grep -aE "^(resumed|sample)" build/consumer/char_gru_resumed.log
straight=$(grep '^step 100 ' build/consumer/char_gru_straight.log)
resumed=$(grep '^step 100 ' build/consumer/char_gru_resumed.log)
[ -n "$straight" ] && [ "$straight" = "$resumed" ] || { echo "char_gru: resumed '$resumed' differs from straight '$straight'"; exit 1; }
echo "char_gru: the resumed run ends on the straight run's loss ($straight)"

# Every C++ code block of the README and of docs/ is checked: one that says it
# is a complete program (its first line reads "// Complete program (compiled
# and run by scripts/test.sh): NAME.cpp") is built against the installed
# package, with only <rmsgrad/rmsgrad.h> (and a model's header), and run,
# and must exit 0; one whose fence reads "```cpp from PATH" is an excerpt
# that scripts/check_tour.py finds verbatim in PATH (CTest tour_references).
# Any other C++ block is an error: it would be checked by nothing.
readme=build/readme-programs
rm -rf "$readme" && mkdir -p "$readme"
awk -v dir="$readme" '
  /^```cpp from / { excerpt = 1; next }
  /^```cpp$/ { inblock = 1; first = 1; file = ""; next }
  /^```$/    { if (file != "") close(file); inblock = 0; excerpt = 0; file = ""; next }
  inblock && first {
    first = 0
    if ($0 ~ /^\/\/ Complete program \(compiled and run by scripts\/test\.sh\): [a-z_]+\.cpp$/) {
      n = split($0, words, " "); file = dir "/" words[n]
    } else {
      print FILENAME ":" FNR ": a C++ block that is neither a complete program nor an excerpt (```cpp from PATH)" > "/dev/stderr"
      bad = 1
    }
  }
  inblock && file != "" { print > file }
  END { exit bad }
' README.md docs/*.md
programs=$(cd "$readme" && ls *.cpp 2>/dev/null | sed 's/\.cpp$//')
[ -n "$programs" ] || { echo "found no complete program in README.md or docs/"; exit 1; }
{
  echo 'cmake_minimum_required(VERSION 3.25)'
  echo 'project(readme_programs LANGUAGES CXX)'
  echo 'find_package(rmsgrad REQUIRED)'
  for p in $programs; do echo "add_executable($p $p.cpp)"; echo "target_link_libraries($p PRIVATE rmsgrad::rmsgrad)"; done
} > "$readme/CMakeLists.txt"
cmake -S "$readme" -B "$readme/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/build/install-moved" >/dev/null
cmake --build "$readme/build" -j"$(nproc)" >/dev/null
for p in $programs; do
  (cd "$readme/build" && "./$p" > /dev/null) || { echo "documented program $p failed"; exit 1; }
  echo "documented program $p: built and ran"
done
