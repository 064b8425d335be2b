#pragma once
// Data-parallel gradients. Each process runs forward and backward on its share
// of the global batch; before the optimizer step every parameter's gradient
// must be the sum over the processes. Summing one parameter at a time would
// pay MPI's latency hundreds of times per step, and summing everything after
// backward would leave the network idle while backward runs. So, as PyTorch's
// DistributedDataParallel and Horovod do:
//
//   - the parameters are packed into buckets in about the order backward
//     finishes them: the first bucket small (kFirstBucketBytes, 1 MiB, as
//     PyTorch's DDP does), so that the first sum starts early, the rest of
//     about `bucket_bytes` (4 MiB by default; a larger parameter gets a
//     bucket of its own). Small buckets start as soon as their gradients are
//     final, where one of PyTorch's 25 MiB holds most of a recurrent model
//     until the last time step's backward: measured on two hosts over
//     1 Gbit/s, RNNSearch hid 0.15 of its sums with 25 MiB and 0.46 with 4,
//     the Transformer 0.34 and 0.67 (BENCHMARKS.md). Each bucket costs a
//     latency per round of the ring, which grows with the processes: for
//     many machines larger buckets pay (docs/scaling.md). The first step
//     guesses the order (reverse registration: the last layer's first);
//     after it the buckets are built again in the order its gradients
//     actually became final on rank 0 (broadcast, so every process has the
//     same buckets);
//   - each parameter's gradient is a view into its bucket's flat buffer (as
//     in DDP), so backward accumulates into the buffer that is summed and
//     nothing is copied in or out;
//   - backward runs with the tape's leaf-ready hook (Tape::backward(loss,
//     ready, after_node)). When the last gradient of a bucket is final, a
//     non-blocking sum of its buffer over the processes starts, while
//     backward goes on with the layers below; after every backward node the
//     reducer lets MPI move the sums on (MPI transfers data only inside its
//     calls);
//   - buckets start strictly in index order, so every process issues the same
//     collectives in the same order (MPI's rule) even if its backward
//     finishes them in another order. A collective that backward itself
//     makes (gather_rows's sum) keeps its place among them only if every
//     process's graph is the same: a model must not skip a parameter on
//     some processes and call a collective in the same backward;
//   - an embedding's gradient is mostly zero rows: a batch uses few of its
//     words. After the first step, a parameter whose gradient on rank 0 had
//     at most kGatherRowsDensity ÷ processes of its rows non-zero gets a
//     bucket of its own that sends only those rows, with their indices: an
//     all-gather of each process's rows, added up after it in rank order.
//     Each process sends its rows once where a ring sum sends the whole
//     matrix about twice; for two processes the result is the same sum,
//     a + b, up to the sign of a zero. (RNNSearch's two 7.8 MiB embeddings
//     send 1.2 MiB each at its benchmark batch; PyTorch's sparse embedding
//     gradients are the same idea.)
//   - after backward, the buckets not yet started start (a parameter that got
//     no gradient this step adds zeros), and all are awaited. A parameter that backward never reaches
//     therefore holds its bucket, and every later one, until backward ends:
//     correct, only without overlap (PyTorch's find_unused_parameters).
//
// The loss on each process must be normalised by the GLOBAL batch (the sum of
// its examples' losses ÷ the number of examples in all processes, or per
// token the same way): the summed gradient is then the gradient of the global
// batch's loss, and N processes take the step one process would, up to the
// order of float additions.
//
//   GradientReducer reducer(ProcessGroup::world(), model.named_parameters());
//   optimizer.zero_grad();
//   reducer.backward(loss);     // instead of loss.backward()
//   optimizer.step();
//
// In a group of one, backward(loss) is loss.backward() and nothing is copied.
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/autograd/var.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/layers/module.h"

namespace rg::dist {

class GradientReducer {
 public:
  static constexpr int64_t kDefaultBucketBytes = int64_t{4} << 20;
  static constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;
  // A parameter gathers its non-zero rows instead of summing when, on the
  // first step, some but at most this fraction ÷ processes of its rows were
  // non-zero (all processes together then send at most half of what one
  // process sends in a ring sum) and it is at least kGatherRowsMinBytes. The
  // choice is made once: a table whose later batches use more of it still
  // gathers, correctly, only with less gain.
  static constexpr double kGatherRowsDensity = 0.5;
  static constexpr int64_t kGatherRowsMinBytes = int64_t{64} << 10;

  GradientReducer(ProcessGroup& group, NamedParameters parameters, int64_t bucket_bytes = kDefaultBucketBytes);

  // loss.backward(), then every parameter's gradient summed over the processes.
  void backward(const Var& loss);

  // The buckets, in the order they are summed: their parameters, their size
  // in floats, whether they gather rows instead of summing, and the bytes this
  // process sent for each in the last backward (4 per float for a sum).
  struct BucketSummary {
    std::vector<std::string> names;
    int64_t values = 0;
    bool gathers_rows = false;
    int64_t bytes_sent = 0;
  };
  std::vector<BucketSummary> buckets() const;

  // How many buckets the last backward started before it ended (the rest
  // start after it). Where its time went is an observer's to measure
  // (core/observer.h: communication_started / communication_finished).
  int buckets_started_in_backward() const { return buckets_started_in_backward_; }

 private:
  struct Bucket {
    std::vector<size_t> members;   // indices into parameters_
    Tensor flat;                   // their gradients, end to end, each from a multiple of 64 bytes
    std::vector<int64_t> offsets;  // of each member in flat
    size_t waiting = 0;            // members whose gradient is not final yet
    // A bucket of one parameter that gathers rows: this process's non-zero
    // rows as (int32 row, its floats) records, every process's after the gather.
    bool gathers_rows = false;
    std::vector<std::byte> rows, gathered;
    std::vector<int64_t> lengths;
  };
  // Buckets of parameters in this order (indices into parameters_), the first of kFirstBucketBytes.
  void make_buckets(const std::vector<size_t>& order);
  // After the first step: the buckets again, in the order rank 0's gradients became final.
  void rebuild_buckets();
  void start_ready_buckets();
  // Points each member's gradient at its place in the bucket's buffer (copying what it held).
  void share_buffer(Bucket& bucket);
  void start(Bucket& bucket);
  void gather_rows(Bucket& bucket);
  void add_gathered_rows(const Bucket& bucket);

  ProcessGroup& group_;
  NamedParameters parameters_;
  std::vector<Bucket> buckets_;
  int64_t bucket_bytes_;
  std::vector<size_t> bucket_of_;   // parameter index → bucket
  size_t next_to_start_ = 0;
  bool rebuilt_ = false;
  std::vector<size_t> ready_order_;  // the first step's parameters, as their gradients became final
  std::vector<double> density_;      // the first step's fraction of non-zero rows per parameter (-1: not measured)
  std::vector<bool> gathers_rows_;   // per parameter
  int buckets_started_in_backward_ = 0;
};

}  // namespace rg::dist
