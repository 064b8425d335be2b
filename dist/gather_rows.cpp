#include "rmsgrad/dist/gather_rows.h"

#include <cstring>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"

namespace rg::dist {

Var gather_rows(const Var& local, const BatchShare& share, ProcessGroup& group) {
  check(local.defined() && local.rank() == 2 && local.dim(0) == share.rows,
        "gather_rows: this process's rows must be [{}, D], got {}", share.rows,
        local.defined() ? local.shape().str() : "undefined");
  if (share.whole()) return local;
  const int64_t width = local.dim(1);
  // Every rank's row count: the same rule batch_share uses, so no message is needed.
  std::vector<int64_t> counts;
  for (int r = 0; r < share.processes; ++r) {
    const int64_t base = share.global / share.processes, extra = share.global % share.processes;
    counts.push_back((base + (r < extra ? 1 : 0)) * width);
  }
  const std::vector<float> all = group.all_gather(local.value().span(), counts);
  Tensor gathered = Tensor::from(Shape{share.global, width}, all);
  return tape().record("gather_rows", std::move(gathered), {local}, [share, width, &group](Node& n) {
    std::vector<float> summed(n.grad.span().begin(), n.grad.span().end());
    group.sum(summed);
    Tensor* d_local = n.input_grad(0);
    if (!d_local) return;
    const float* from = summed.data() + share.first * width;
    float* to = d_local->data();
    for (int64_t i = 0; i < share.rows * width; ++i) to[i] += from[i];
  });
}

}  // namespace rg::dist
