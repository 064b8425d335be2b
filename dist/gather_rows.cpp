#include "rmsgrad/dist/gather_rows.h"

#include <cstring>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"

namespace rg::dist {

Var gather_rows(const Var& local, const BatchShare& share, ProcessGroup& group) {
  check(local.defined() && local.rank() == 2 && local.dim(0) == share.rows,
        "gather_rows: this process's rows must be [{}, D], got {}", share.rows,
        shape_of(local));
  if (share.whole()) return local;
  const int64_t width = local.dim(1);
  // Every rank's share is known from the batch alone, so no message is needed for the counts.
  std::vector<int64_t> counts;
  for (int r = 0; r < share.processes; ++r) counts.push_back(share.rows_of(r) * width);
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
