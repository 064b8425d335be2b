#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, one per reader) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/, then runs
# each for the given time and fails on any crash, sanitizer report, leak,
# hang (an input taking longer than TIMEOUT seconds) or out-of-memory (one
# allocation over MALLOC_MB or a resident set over RSS_MB). Each target runs
# WORKERS fuzzer processes side by side (default: one per core).
#
# Usage: scripts/fuzz.sh [seconds per target, default 60] [target ...]
#   e.g. scripts/fuzz.sh 30            every target for 30 s (CI)
#        scripts/fuzz.sh 600 npy babi  two targets for 10 minutes each
#
# Seeds: the committed fuzz/corpus/<target>/ and, when ../shared/data is
# present, a few real files cut from it into build-fuzz/seeds/<target>/.
# What a run discovers is kept in build-fuzz/corpus/<target>/ for the next
# run; a failing input is saved in build-fuzz/artifacts/<target>/ (reproduce
# with build-fuzz/bin/<target>_fuzzer <file>; add it to a test in tests/).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
TIMEOUT=${TIMEOUT:-10}
RSS_MB=${RSS_MB:-2048}
MALLOC_MB=${MALLOC_MB:-1024}
workers=${WORKERS:-$(nproc)}

# The harnesses write every input to a scratch file; in memory (tmpfs) that is cheap.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi

scripts/deps.sh
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DRG_FUZZ=ON -DRG_BUILD_TESTS=OFF -DRG_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzzers

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzzer.cpp; do targets+=("$(basename "$f" _fuzzer.cpp)"); done
fi

# Real files from ../shared/data, cut small (never copied into the repository).
shared=../shared/data
seeds=build-fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{cifar_binary,image_folder,archive,babi,cbt,parallel_text}
if [ -d "$shared" ]; then
  batch="$shared/cifar10/cifar-10-batches-bin-prefix/data_batch_1.bin"
  [ -f "$batch" ] && head -c $((2 * 3073)) "$batch" > "$seeds/cifar_binary/real_two_records.bin"
  jpegs="$shared/cifar10/cifar10-train-jpeg.tar.gz"
  if [ -f "$jpegs" ]; then
    work=$(mktemp -d)
    names=()
    for c in airplane automobile bird cat deer dog frog horse ship truck; do names+=("train/$c/0000.jpg"); done
    if tar -xzf "$jpegs" -C "$work" "${names[@]}" 2>/dev/null; then
      cp "$work/train/airplane/0000.jpg" "$seeds/image_folder/real_airplane.jpg"
      cp "$work/train/cat/0000.jpg" "$seeds/image_folder/real_cat.jpg"
      tar -czf "$seeds/archive/real_ten_jpegs.tar.gz" -C "$work" train
    fi
    rm -rf "$work"
  fi
  babi="$shared/babi/en/qa1_single-supporting-fact_train.txt"
  [ -f "$babi" ] && head -n 30 "$babi" > "$seeds/babi/real_qa1.txt"
  cbt="$shared/cbt/CBTest/data/cbtest_NE_valid_2000ex.txt"
  [ -f "$cbt" ] && head -n 44 "$cbt" > "$seeds/cbt/real_two_questions.txt"
  book="$shared/cbt/CBTest/data/cbt_valid.txt"
  [ -f "$book" ] && head -n 50 "$book" > "$seeds/cbt/real_book.txt"
  de="$shared/multi30k/task1/raw/val.de.gz" en="$shared/multi30k/task1/raw/val.en.gz"
  if [ -f "$de" ] && [ -f "$en" ]; then
    zcat "$de" | head -n 4 > "$seeds/de.txt" || true   # zcat stops on SIGPIPE
    zcat "$en" | head -n 4 > "$seeds/en.txt" || true
    python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(); e=open(sys.argv[2],'rb').read(); \
sys.stdout.buffer.write(struct.pack('>H', len(d)) + d + e)" "$seeds/de.txt" "$seeds/en.txt" \
      > "$seeds/parallel_text/real_multi30k"
    rm "$seeds/de.txt" "$seeds/en.txt"
  fi
else
  echo "note: ../shared/data is absent; fuzzing from the committed seeds only"
fi

failed=()
summary=()
for t in "${targets[@]}"; do
  binary=build-fuzz/bin/${t}_fuzzer
  [ -x "$binary" ] || { echo "no such fuzz target: $t (fuzz/${t}_fuzzer.cpp)"; exit 2; }
  corpus=build-fuzz/corpus/$t artifacts=build-fuzz/artifacts/$t log=build-fuzz/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")" "$seeds/$t"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  # Without -max_len libFuzzer grows inputs up to the largest seed (4096 bytes
  # at least). cbt's cut of real CBT text is 6,844 bytes, and its reader's
  # time grows with the text: 1,024 bytes still hold the committed seeds
  # (1,004 and 393 bytes) whole and several lines of the real ones, and run
  # 2,500 inputs/s where 6,844 ran 860/s (one core, the harness of this commit).
  max_len=()
  case "$t" in
    cbt) max_len=(-max_len=1024) ;;
  esac
  echo "== fuzzing $t for ${seconds}s with $workers worker(s)"
  # One fuzzer process per core, all on the same corpus folder (each picks up
  # what the others add to it, as libFuzzer's -jobs does); the target's count
  # is the sum of theirs. The first folder receives new inputs; the seed
  # folders are only read. -close_fd_mask=1 silences the readers' stdout;
  # reports go to stderr.
  pids=()
  for w in $(seq 1 "$workers"); do
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$binary" "$corpus" "fuzz/corpus/$t" "$seeds/$t" "${dict[@]}" "${max_len[@]}" -max_total_time="$seconds" \
      -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$MALLOC_MB" -close_fd_mask=1 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" > "$log.$w" 2>&1 &
    pids+=($!)
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
  cat "$log".* > "$log"
  rm -f "$log".*
  runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | awk '{s += $1} END {print s}')
  time=$(grep -ao 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | awk '{s += $1} END {print s}')
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    summary+=("$(printf '%-20s FAILED (exit %s); see %s and %s' "$t" "$status" "$log" "$artifacts")")
    grep -aE 'ERROR|SUMMARY|==[0-9]+==|runtime error|terminate|Test unit written' "$log" | head -20 || true
  else
    summary+=("$(printf '%-20s %8ss %12s inputs %8s/s  (%s workers)' "$t" "$seconds" "${runs:-?}" "${time:-?}" "$workers")")
  fi
done

echo "== fuzzing summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
