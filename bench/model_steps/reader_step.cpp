#include "bench/model_steps/reader_step.h"

#include "rmsgrad/core/error.h"

#include <algorithm>

#include "rmsgrad/experiments/attentive_reader/reader_config.h"

namespace rg::bench {

ReaderStep::ReaderStep(const NormOptions& norm, Sizes& sizes) {
  reader::ReaderConfig cfg;
  const int64_t batch = sizes.integer("batch", cfg.batch), doc_len = sizes.integer("doc_len", 300);
  const int64_t query_len = sizes.integer("query_len", 20);
  vocab_ = sizes.integer("vocab", 10000);
  check(vocab_ > 4, "reader: vocab must be above 4");
  cfg.embed = sizes.integer("embed", cfg.embed);
  cfg.hidden = sizes.integer("hidden", cfg.hidden);
  candidates_per_question_ = sizes.integer("candidates", 10);
  cfg.norm = norm;
  cfg.dropout = sizes.real("dropout", cfg.dropout);
  const AdamOptions adam = read_adam(sizes, cfg.kRecipe.adam);
  const ClipOptions clip = read_clip(sizes, cfg.kRecipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<AttentiveReader>(reader::model_options(cfg, vocab_), gen_, noise_gen_);
    model_->train();
    use_adam(adam, clip);
  }
  reshape(batch, doc_len, query_len);
}

// Documents of 5/6 to all of doc_len tokens, queries of query_len − 8 to
// query_len, `candidates` candidates of which the (i mod k)-th is the answer.
void ReaderStep::reshape(int64_t batch, int64_t doc_len, int64_t query_len) {
  const int64_t k = candidates_per_question_, min_doc = (5 * doc_len + 5) / 6;
  const int64_t min_query = std::max<int64_t>(1, query_len - 8);
  std::vector<int64_t> doc_lengths(batch), query_lengths(batch);
  for (int64_t i = 0; i < batch; ++i) {
    doc_lengths[i] = min_doc + (7 * i) % (doc_len - min_doc + 1);
    query_lengths[i] = min_query + (5 * i) % (query_len - min_query + 1);
  }
  document_ = random_tokens(doc_lengths, vocab_, gen_);
  query_ = random_tokens(query_lengths, vocab_, gen_);
  std::vector<int32_t> candidate_ids(static_cast<size_t>(batch * k)), answer_ids;
  for (auto& id : candidate_ids) id = 4 + static_cast<int32_t>(gen_.randint(vocab_ - 4));
  for (int64_t i = 0; i < batch; ++i) answer_ids.push_back(static_cast<int32_t>(i % k));
  ObserverScope scope("inputs");
  candidates_ = Indices(Shape{batch, k}, candidate_ids);
  answers_ = Indices(Shape{batch}, answer_ids);
  candidate_padding_ = Tensor::zeros(Shape{batch, k});
}

Var ReaderStep::batch_loss() {
  const ReaderInputs in{document_.ids, document_.mask, query_.ids, query_.mask, candidates_, candidate_padding_};
  return model_->loss(in, answers_);
}

}  // namespace rg::bench
