#include "rmsgrad/dist/gradient_reducer.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/observer.h"

namespace rg::dist {

namespace {
// Tells the observer, if one is installed, when the calls that move the sums begin and end.
class CommunicationScope {
 public:
  CommunicationScope() : observer_(installed_observer()) {
    if (observer_) observer_->communication_started();
  }
  ~CommunicationScope() {
    if (observer_) observer_->communication_finished();
  }
  CommunicationScope(const CommunicationScope&) = delete;
  CommunicationScope& operator=(const CommunicationScope&) = delete;

 private:
  Observer* observer_;
};
}  // namespace

namespace {
// A parameter registered under two names (a tied embedding) is summed once.
NamedParameters distinct(NamedParameters parameters) {
  NamedParameters out;
  std::vector<Node*> seen;
  for (auto& [name, var] : parameters)
    if (std::find(seen.begin(), seen.end(), var.node()) == seen.end()) {
      seen.push_back(var.node());
      out.emplace_back(std::move(name), std::move(var));
    }
  return out;
}
}  // namespace

GradientReducer::GradientReducer(ProcessGroup& group, NamedParameters parameters, int64_t bucket_bytes)
    : group_(group), parameters_(distinct(std::move(parameters))), bucket_bytes_(bucket_bytes),
      bucket_of_(parameters_.size()), density_(parameters_.size(), -1.0), gathers_rows_(parameters_.size(), false) {
  check(bucket_bytes > 0, "GradientReducer: bucket size {} bytes; it must be positive", bucket_bytes);
  std::vector<size_t> reverse(parameters_.size());
  for (size_t i = 0; i < reverse.size(); ++i) reverse[i] = reverse.size() - 1 - i;
  make_buckets(reverse);
}

void GradientReducer::make_buckets(const std::vector<size_t>& order) {
  buckets_.clear();
  const int64_t first_limit = std::min(kFirstBucketBytes, bucket_bytes_);
  int64_t bytes = 0;
  int summing = 0;    // buckets that sum so far
  bool open = false;  // the last bucket takes more parameters
  for (size_t i : order) {
    if (gathers_rows_[i]) {
      buckets_.emplace_back();
      buckets_.back().members.push_back(i);
      buckets_.back().gathers_rows = true;
      bucket_of_[i] = buckets_.size() - 1;
      open = false;
      continue;
    }
    const int64_t size = parameters_[i].second.numel() * static_cast<int64_t>(sizeof(float));
    const int64_t limit = summing == 1 ? first_limit : bucket_bytes_;
    if (!open || (bytes > 0 && bytes + size > limit)) {
      buckets_.emplace_back();
      bytes = 0;
      open = true;
      ++summing;
    }
    buckets_.back().members.push_back(i);
    bucket_of_[i] = buckets_.size() - 1;
    bytes += size;
  }
  if (!group_.distributed()) return;  // one process sums nothing: no buffers
  for (Bucket& bucket : buckets_) {
    if (!bucket.gathers_rows) {
      share_buffer(bucket);
      continue;
    }
    // A gradient of its own, not a view that would keep an old bucket's buffer alive.
    Node& node = *parameters_[bucket.members[0]].second.node();
    if (node.grad.defined()) node.grad = node.grad.clone();
  }
}

void GradientReducer::share_buffer(Bucket& bucket) {
  constexpr int64_t kAlign = 64 / sizeof(float);  // the alignment kernels expect of a tensor
  int64_t count = 0;
  bucket.offsets.clear();
  for (size_t i : bucket.members) {
    bucket.offsets.push_back(count);
    count += (parameters_[i].second.numel() + kAlign - 1) / kAlign * kAlign;
  }
  bucket.flat = Tensor::zeros(Shape{count});  // the gaps stay zero, and their sums too
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    Node& node = *parameters_[bucket.members[k]].second.node();
    Tensor view = bucket.flat.view(bucket.offsets[k], node.value.shape());
    if (node.grad.defined()) view.copy_from(node.grad);
    node.grad = view;
    node.grad_borrowed = false;
  }
}

void GradientReducer::rebuild_buckets() {
  // Rank 0's order and its choice of the parameters that gather rows, for
  // every process; parameters it did not see become ready go last, in the
  // order they had.
  std::string plan;
  for (size_t i : ready_order_) plan += std::to_string(i) + " ";
  plan += "/ ";
  for (size_t i = 0; i < parameters_.size(); ++i)
    if (density_[i] >= 0 && density_[i] * group_.size() <= kGatherRowsDensity) plan += std::to_string(i) + " ";
  plan = group_.broadcast(plan);
  std::vector<size_t> rebuilt;
  std::vector<bool> placed(parameters_.size(), false);
  std::istringstream in(plan);
  for (std::string word; in >> word && word != "/";)
    if (size_t i = std::stoul(word); i < parameters_.size() && !placed[i]) rebuilt.push_back(i), placed[i] = true;
  for (size_t i; in >> i;)
    if (i < parameters_.size()) gathers_rows_[i] = true;
  for (const Bucket& bucket : buckets_)
    for (size_t i : bucket.members)
      if (!placed[i]) rebuilt.push_back(i), placed[i] = true;
  make_buckets(rebuilt);
  ready_order_.clear();
}

std::vector<GradientReducer::BucketSummary> GradientReducer::buckets() const {
  std::vector<BucketSummary> summaries;
  for (const Bucket& bucket : buckets_) {
    BucketSummary summary;
    for (size_t i : bucket.members) {
      summary.names.push_back(parameters_[i].first);
      summary.values += parameters_[i].second.numel();
    }
    summary.gathers_rows = bucket.gathers_rows;
    summary.bytes_sent = bucket.gathers_rows ? static_cast<int64_t>(bucket.rows.size())
                                             : summary.values * static_cast<int64_t>(sizeof(float));
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

void GradientReducer::backward(const Var& loss) {
  buckets_started_in_backward_ = 0;
  if (!group_.distributed()) {
    tape().backward(loss);
    return;
  }
  for (Bucket& bucket : buckets_) bucket.waiting = bucket.members.size();
  next_to_start_ = 0;
  // Parameters by node, for the hook. Rebuilt each step: cheap next to a
  // backward pass, and a model may have replaced a parameter's Var.
  std::vector<std::pair<Node*, size_t>> by_node;
  by_node.reserve(parameters_.size());
  for (size_t i = 0; i < parameters_.size(); ++i) by_node.emplace_back(parameters_[i].second.node(), i);
  std::sort(by_node.begin(), by_node.end());
  const auto ready = [&](Node& leaf) {
    auto it = std::lower_bound(by_node.begin(), by_node.end(), std::pair<Node*, size_t>(&leaf, 0));
    if (it == by_node.end() || it->first != &leaf) return;  // a trainable input that is not a parameter
    if (!rebuilt_) ready_order_.push_back(it->second);
    --buckets_[bucket_of_[it->second]].waiting;
    CommunicationScope communicating;
    start_ready_buckets();
  };
  const auto after_node = [&] {
    if (next_to_start_ == 0) return;  // nothing on its way yet
    CommunicationScope communicating;
    group_.progress();
  };
  tape().backward(loss, ready, after_node);
  buckets_started_in_backward_ = static_cast<int>(next_to_start_);
  {
    CommunicationScope waiting;
    while (next_to_start_ < buckets_.size()) start(buckets_[next_to_start_++]);
    group_.wait_all();
    for (Bucket& bucket : buckets_)
      if (bucket.gathers_rows) add_gathered_rows(bucket);
  }
  if (!rebuilt_) {
    rebuild_buckets();
    rebuilt_ = true;
  }
}

void GradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].waiting == 0) start(buckets_[next_to_start_++]);
}

namespace {
// A gradient as rows: the first dimension's entries, each of the rest's size.
int64_t rows_of(const Var& parameter) { return parameter.rank() >= 2 ? parameter.dim(0) : 1; }
// Every bit but the sign's, or-ed over the row: zero only for ±0 values (a
// loop without an early exit, which the compiler vectorizes).
bool row_is_zero(const float* row, int64_t width) {
  uint32_t bits = 0;
  for (int64_t j = 0; j < width; ++j) bits |= std::bit_cast<uint32_t>(row[j]) & 0x7fffffffu;
  return bits == 0;
}
bool row_has_negative_zero(const float* row, int64_t width) {
  uint32_t bits = 0;
  for (int64_t j = 0; j < width; ++j) bits |= std::bit_cast<uint32_t>(row[j]);
  return bits != 0;  // for a row of ±0: a sign bit is set
}
}  // namespace

void GradientReducer::start(Bucket& bucket) {
  if (bucket.gathers_rows) return gather_rows(bucket);
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    const size_t i = bucket.members[k];
    Node& node = *parameters_[i].second.node();
    float* place = bucket.flat.data() + bucket.offsets[k];
    const int64_t n = node.value.numel();
    // Backward accumulated into the buffer, unless the gradient was replaced
    // (released, or set by hand) since: then it is copied, and shares again.
    if (!node.grad.defined() || node.grad.data() != place) {
      if (node.grad.defined())
        std::memcpy(place, node.grad.data(), sizeof(float) * static_cast<size_t>(n));
      else
        std::fill(place, place + n, 0.0f);
      node.grad = bucket.flat.view(bucket.offsets[k], node.value.shape());
      node.grad_borrowed = false;
    }
    // The first step measures, on rank 0, which parameters' gradients are mostly zero rows.
    const int64_t rows = rows_of(parameters_[i].second);
    if (!rebuilt_ && group_.writer() && rows > 1 && n * static_cast<int64_t>(sizeof(float)) >= kGatherRowsMinBytes) {
      int64_t nonzero = 0;
      for (int64_t r = 0; r < rows; ++r) nonzero += !row_is_zero(place + r * (n / rows), n / rows);
      // A gradient that is zero throughout (a layer backward did not reach,
      // or that starts at zero) says nothing about later steps: it sums.
      if (nonzero > 0) density_[i] = static_cast<double>(nonzero) / static_cast<double>(rows);
    }
  }
  group_.start_sum(std::span<float>(bucket.flat.data(), static_cast<size_t>(bucket.flat.numel())),
                   fmt::format("the gradient sum of bucket {} of {} ({} values)", &bucket - buckets_.data() + 1,
                               buckets_.size(), bucket.flat.numel()));
}

// Each non-zero row as a record: its index (int32), then its floats.
void GradientReducer::gather_rows(Bucket& bucket) {
  const auto& [name, parameter] = parameters_[bucket.members[0]];
  const int64_t rows = rows_of(parameter), width = parameter.numel() / rows;
  check(rows <= INT32_MAX, "GradientReducer: {} has {} rows, more than a gathered row's index can name", name, rows);
  const size_t record = sizeof(int32_t) + sizeof(float) * static_cast<size_t>(width);
  bucket.rows.clear();
  if (parameter.has_grad()) {
    float* grad = parameter.node()->grad.data();
    for (int64_t r = 0; r < rows; ++r) {
      float* row = grad + r * width;
      if (row_is_zero(row, width)) {
        // Every process starts the sum from +0 in every row, so that all
        // end with the same bits (−0 + −0 is −0, +0 + −0 is +0).
        if (row_has_negative_zero(row, width)) std::fill_n(row, width, 0.0f);
        continue;
      }
      const size_t at = bucket.rows.size();
      bucket.rows.resize(at + record);
      const int32_t index = static_cast<int32_t>(r);
      std::memcpy(bucket.rows.data() + at, &index, sizeof index);
      std::memcpy(bucket.rows.data() + at + sizeof index, row, sizeof(float) * static_cast<size_t>(width));
    }
  }
  group_.start_all_gather(bucket.rows, bucket.gathered, bucket.lengths,
                          fmt::format("the gathering of {}'s non-zero gradient rows (bucket {} of {})", name,
                                      &bucket - buckets_.data() + 1, buckets_.size()));
}

// The gradient: zero, plus every process's rows in rank order (the same
// order on every process, so that all end with the same floats). The rows
// this process did not send are +0 already (gather_rows); the ones it sent
// are zeroed.
void GradientReducer::add_gathered_rows(const Bucket& bucket) {
  const auto& [name, parameter] = parameters_[bucket.members[0]];
  const int64_t rows = rows_of(parameter), width = parameter.numel() / rows;
  const size_t record = sizeof(int32_t) + sizeof(float) * static_cast<size_t>(width);
  Tensor& grad = parameters_[bucket.members[0]].second.grad();
  for (size_t at = 0; at < bucket.rows.size(); at += record) {
    int32_t index = 0;
    std::memcpy(&index, bucket.rows.data() + at, sizeof index);
    std::fill_n(grad.data() + static_cast<int64_t>(index) * width, width, 0.0f);
  }
  std::vector<float> row(static_cast<size_t>(width));
  const std::byte* at = bucket.gathered.data();
  for (int rank = 0; rank < group_.size(); ++rank) {
    const int64_t length = bucket.lengths[static_cast<size_t>(rank)];
    check(length % static_cast<int64_t>(record) == 0, "GradientReducer: {} sent {} bytes of {}'s rows, not a whole "
          "number of {}-byte rows", group_.describe(rank), length, name, record);
    for (const std::byte* end = at + length; at < end; at += record) {
      int32_t index = 0;
      std::memcpy(&index, at, sizeof index);
      check(index >= 0 && index < rows, "GradientReducer: {} sent row {} of {}, which has {} rows",
            group_.describe(rank), index, name, rows);
      std::memcpy(row.data(), at + sizeof index, sizeof(float) * row.size());
      float* to = grad.data() + static_cast<int64_t>(index) * width;
      for (int64_t j = 0; j < width; ++j) to[j] += row[static_cast<size_t>(j)];
    }
  }
}

}  // namespace rg::dist
