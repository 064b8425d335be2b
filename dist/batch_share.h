#pragma once
// Which examples of a global batch this process trains on.
//
// `--batch` is the GLOBAL batch: every process builds the same batch, in the
// same order, as one process would, and takes its share of it: rank r of N
// gets a contiguous block of rows, the blocks differing in size by at most
// one (the first `global % N` ranks get one more). Its loss must then be
// normalised by the global batch — scale a mean over its own rows by
// rows / global (`weight()`), or divide a sum by the global count — so that
// the gradients summed over the processes (gradient_reducer.h) are those of
// the whole batch.
//
// While a step's ScopedBatchShard (core/random.h) is alive, dropout and
// noise draw for each of the process's rows what one process would draw for
// that row of the whole batch, so the run does not depend on N.
//
//   const BatchShare share = batch_share(ProcessGroup::world(), batch.size());
//   ScopedBatchShard shard = share.shard();
//   Var loss = share.part_of_mean(model.loss(rows share.first … share.end() − 1));
#include <algorithm>
#include <cstdint>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/dist/process_group.h"

namespace rg::dist {

struct BatchShare {
  int64_t first = 0;   // the first of this process's rows
  int64_t rows = 0;    // how many
  int64_t global = 0;  // rows in the whole batch
  int processes = 1;

  int64_t end() const { return first + rows; }
  // How many rows rank `r` gets: the first `global % processes` ranks one more.
  int64_t rows_of(int r) const { return global / processes + (r < global % processes ? 1 : 0); }
  bool whole() const { return rows == global; }
  // This share of a loss that is a mean over the global batch: rows / global.
  float weight() const { return static_cast<float>(static_cast<double>(rows) / static_cast<double>(global)); }
  // A mean over this process's rows, made its part of the global batch's mean
  // (the loss itself when the batch is whole: one process records no extra op).
  Var part_of_mean(const Var& local_mean) const { return whole() ? local_mean : local_mean * weight(); }
  // The random draws of this share (for a whole batch the draws are those
  // without a shard; only the batch axis's size is checked).
  ScopedBatchShard shard() const { return ScopedBatchShard(global, first, rows); }
};

inline BatchShare batch_share(const ProcessGroup& group, int64_t global_rows) {
  const int64_t n = group.size(), r = group.rank();
  check(global_rows >= n, "a batch of {} cannot be shared by {} processes; each needs at least one example (make "
        "--batch at least the number of processes)", global_rows, n);
  BatchShare share;
  share.global = global_rows;
  share.processes = static_cast<int>(n);
  share.rows = share.rows_of(static_cast<int>(r));
  share.first = r * (global_rows / n) + std::min(r, global_rows % n);
  return share;
}

}  // namespace rg::dist
