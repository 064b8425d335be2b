#include "rmsgrad/layers/mlp.h"

#include <memory>

#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/dropout.h"

namespace rg {

MLP::MLP(int64_t in_features, const std::vector<int64_t>& hidden_sizes, int64_t out_features, Generator& gen,
         const MLPOptions& options) {
  check(in_features > 0 && out_features > 0, "MLP: sizes must be positive (in {}, out {})", in_features,
        out_features);
  check(options.dropout >= 0.0f && options.dropout < 1.0f, "MLP: dropout {} is not in [0, 1)", options.dropout);
  int64_t width = in_features;
  for (int64_t hidden : hidden_sizes) {
    check(hidden > 0, "MLP: hidden size {} is not positive", hidden);
    add(std::make_shared<Linear>(width, hidden, gen, options.linear));
    if (options.norm.normalizes()) add(make_norm(options.norm, hidden));
    add(std::make_shared<ActivationLayer>(options.activation));
    // Each dropout owns a generator seeded from `gen`, so masks do not depend
    // on who else draws from it later.
    if (options.dropout > 0.0f) add(std::make_shared<Dropout>(options.dropout, gen.next_u64()));
    width = hidden;
  }
  add(std::make_shared<Linear>(width, out_features, gen, options.linear));
}

}  // namespace rg
