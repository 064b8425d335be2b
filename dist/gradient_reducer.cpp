#include "rmsgrad/dist/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"

namespace rg::dist {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
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
      bucket_of_(parameters_.size()) {
  check(bucket_bytes > 0, "GradientReducer: bucket size {} bytes; it must be positive", bucket_bytes);
  std::vector<size_t> reverse(parameters_.size());
  for (size_t i = 0; i < reverse.size(); ++i) reverse[i] = reverse.size() - 1 - i;
  make_buckets(reverse);
}

void GradientReducer::make_buckets(const std::vector<size_t>& order) {
  buckets_.clear();
  const int64_t first_limit = std::min(kFirstBucketBytes, bucket_bytes_);
  int64_t bytes = 0;
  for (size_t i : order) {
    const int64_t size = parameters_[i].second.numel() * static_cast<int64_t>(sizeof(float));
    const int64_t limit = buckets_.size() == 1 ? first_limit : bucket_bytes_;
    if (buckets_.empty() || (bytes > 0 && bytes + size > limit)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().members.push_back(i);
    bucket_of_[i] = buckets_.size() - 1;
    bytes += size;
  }
  if (!group_.distributed()) return;  // one process copies nothing: no buffers
  for (Bucket& bucket : buckets_) {
    int64_t count = 0;
    for (size_t i : bucket.members) count += parameters_[i].second.numel();
    bucket.flat.resize(static_cast<size_t>(count));
  }
}

void GradientReducer::rebuild_buckets() {
  // Rank 0's order, for every process; parameters it did not see become
  // ready go last, in the order they had.
  std::string order;
  for (size_t i : ready_order_) order += std::to_string(i) + " ";
  order = group_.broadcast(order);
  std::vector<size_t> rebuilt;
  std::vector<bool> placed(parameters_.size(), false);
  std::istringstream in(order);
  for (size_t i; in >> i;)
    if (i < parameters_.size() && !placed[i]) rebuilt.push_back(i), placed[i] = true;
  for (const Bucket& bucket : buckets_)
    for (size_t i : bucket.members)
      if (!placed[i]) rebuilt.push_back(i), placed[i] = true;
  make_buckets(rebuilt);
  ready_order_.clear();
}

std::vector<std::vector<std::string>> GradientReducer::bucket_names() const {
  std::vector<std::vector<std::string>> names;
  for (const Bucket& bucket : buckets_) {
    names.emplace_back();
    for (size_t i : bucket.members) names.back().push_back(parameters_[i].first);
  }
  return names;
}

std::vector<int64_t> GradientReducer::bucket_sizes() const {
  std::vector<int64_t> sizes;
  for (const Bucket& bucket : buckets_) {
    int64_t n = 0;
    for (size_t i : bucket.members) n += parameters_[i].second.numel();
    sizes.push_back(n);
  }
  return sizes;
}

void GradientReducer::backward(const Var& loss) {
  timing_ = Timing{};
  const auto start_time = std::chrono::steady_clock::now();
  if (!group_.distributed()) {
    tape().backward(loss);
    timing_.backward_seconds = seconds_since(start_time);
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
  double communicating = 0.0;
  const auto ready = [&](Node& leaf) {
    auto it = std::lower_bound(by_node.begin(), by_node.end(), std::pair<Node*, size_t>(&leaf, 0));
    if (it == by_node.end() || it->first != &leaf) return;  // a trainable input that is not a parameter
    if (!rebuilt_) ready_order_.push_back(it->second);
    --buckets_[bucket_of_[it->second]].waiting;
    const auto start = std::chrono::steady_clock::now();
    start_ready_buckets();
    communicating += seconds_since(start);
  };
  const auto after_node = [&] {
    if (next_to_start_ == 0) return;  // nothing on its way yet
    const auto start = std::chrono::steady_clock::now();
    group_.progress();
    communicating += seconds_since(start);
  };
  tape().backward(loss, ready, after_node);
  timing_.buckets_started_in_backward = static_cast<int>(next_to_start_);
  timing_.communication_in_backward_seconds = communicating;
  timing_.backward_seconds = seconds_since(start_time);

  const auto wait_start = std::chrono::steady_clock::now();
  while (next_to_start_ < buckets_.size()) start(buckets_[next_to_start_++]);
  group_.wait_all();
  for (Bucket& bucket : buckets_) {
    const float* from = bucket.flat.data();
    for (size_t i : bucket.members) {
      Tensor& grad = parameters_[i].second.grad();  // allocated (zeros) for a parameter that got none
      std::memcpy(grad.data(), from, sizeof(float) * static_cast<size_t>(grad.numel()));
      from += grad.numel();
    }
  }
  timing_.wait_seconds = seconds_since(wait_start);
  if (!rebuilt_) {
    rebuild_buckets();
    rebuilt_ = true;
  }
}

void GradientReducer::start_ready_buckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].waiting == 0) start(buckets_[next_to_start_++]);
}

void GradientReducer::start(Bucket& bucket) {
  float* to = bucket.flat.data();
  for (size_t i : bucket.members) {
    const Var& parameter = parameters_[i].second;
    const int64_t n = parameter.numel();
    if (parameter.has_grad())
      std::memcpy(to, parameter.node()->grad.data(), sizeof(float) * static_cast<size_t>(n));
    else
      std::fill(to, to + n, 0.0f);
    to += n;
  }
  group_.start_sum(bucket.flat, fmt::format("the gradient sum of bucket {} of {} ({} values)",
                                            &bucket - buckets_.data() + 1, buckets_.size(), bucket.flat.size()));
}

}  // namespace rg::dist
