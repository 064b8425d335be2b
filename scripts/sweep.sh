# The part every scripts/*_paper.sh shares; sourced, not run.
#
#   train_every_norm DRIVER OUT [driver flags ...]
#     trains build/bin/DRIVER once per norm in $norms into OUT/<norm>, or, with
#     SEEDS="1 2 3", once per norm and seed into OUT/<norm>-seed<S> (--seed S);
#     a run whose directory holds a checkpoint is resumed, so an interrupted
#     sweep continues where it stopped. JOBS=2 trains two runs at a time (give
#     each --threads 1 on two cores), each writing its console to <dir>.console;
#     the sweep fails after all have ended if any failed. KEEP=DIR copies each
#     run's record (config.json, metrics.jsonl, train.log: no checkpoints)
#     into DIR/<norm>[-seed<S>] when the run ends well, so that a table can be
#     made again after the run folders are gone.
#   time_in_pairs MODEL OUT [driver flags ...]
#     paired timing of the model's steps (scripts/paired_timing.sh) and sets
#     the array `paired` to the paper_table flags that use it (empty when
#     PAIRED=0 and no earlier timing is in OUT).
#
#   multi30k_args [driver flags ...]
#     sets the array `args` to the flags with --multi30k replaced by the
#     Multi30k German→English files of ../shared/data (train, val, and
#     test2016 as the test set); exits with a message when they are absent.
#
# paper_table turns several seeds of a norm into one row (mean ± sd, and the
# difference from LayerNorm paired by seed with its 95% interval), and
# plot_curves.py draws them as a mean curve with a band.

train_every_norm() {
  local driver=$1 out=$2 norm seed dir jobs=${JOBS:-1} running=0 failed=0
  shift 2
  for norm in $norms; do
    for seed in ${SEEDS:-default}; do
      local seed_flag=() resume=(--overwrite)  # a run killed before its first checkpoint starts afresh
      dir=$out/$norm
      if [ "$seed" != default ]; then
        dir=$out/$norm-seed$seed
        seed_flag=(--seed "$seed")
      fi
      [ -f "$dir/checkpoint.safetensors" ] && resume=(--resume)
      echo "== $driver --norm $norm ${seed_flag[*]}"
      local command=(build/bin/"$driver" --norm "$norm" --out "$dir" "${seed_flag[@]}" "${resume[@]}" "$@")
      if [ "$jobs" -le 1 ]; then
        "${command[@]}"
        keep_run "$dir"
        continue
      fi
      if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
      fi
      mkdir -p "$(dirname "$dir")"
      { "${command[@]}" >"$dir.console" 2>&1 && keep_run "$dir"; } &
      running=$((running + 1))
    done
  done
  while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
  done
  if [ "$failed" != 0 ]; then
    echo "error: a run of $driver failed; its <dir>.console in $out says why" >&2
    return 1
  fi
}

keep_run() {
  local dir=$1
  [ -n "${KEEP:-}" ] || return 0
  mkdir -p "$KEEP/$(basename "$dir")"
  cp "$dir/config.json" "$dir/metrics.jsonl" "$dir/train.log" "$KEEP/$(basename "$dir")/"
}

time_in_pairs() {
  local model=$1 out=$2
  shift 2
  scripts/paired_timing.sh "$model" "$out" "$@"
  paired=()
  if [ -f "$out/paired.jsonl" ]; then paired=(--paired "$out/paired.jsonl"); fi
}

multi30k_args() {
  args=()
  local a raw=../shared/data/multi30k/task1/raw
  for a in "$@"; do
    if [ "$a" = --multi30k ]; then
      if [ ! -f "$raw/train.de.gz" ]; then
        echo "error: --multi30k needs $raw/train.de.gz (../shared/data is not on this machine)" >&2
        exit 1
      fi
      args+=(--train-src "$raw/train.de.gz" --train-tgt "$raw/train.en.gz"
             --valid-src "$raw/val.de.gz" --valid-tgt "$raw/val.en.gz"
             --test-src "$raw/test_2016_flickr.de.gz" --test-tgt "$raw/test_2016_flickr.en.gz")
    else
      args+=("$a")
    fi
  done
}
