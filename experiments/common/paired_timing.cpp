#include "rmsgrad/experiments/common/paired_timing.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

double number_or_missing(const nlohmann::json& line, const char* key) {
  return line.contains(key) && line[key].is_number() ? line[key].get<double>() : kMissing;
}

// "RMSNorm" for "rmsnorm", as the prose names them.
std::string display_name(const std::string& norm) {
  if (norm == "rmsnorm") return "RMSNorm";
  if (norm == "prmsnorm") return "pRMSNorm";
  if (norm == "layernorm") return "LayerNorm";
  return norm;
}

// A speedup and how sure it is: "is 12.3% faster than LayerNorm's (95%
// interval 10.1 to 14.0%)", "is 3.0% slower ...", or "is as fast ... within
// the noise" when the interval holds 0.
std::string verdict(const PairedRow& row) {
  const double speedup = 100.0 * (1.0 - row.ratio);
  const std::string interval = std::isnan(row.low)
                                   ? std::string("too few pairs for an interval")
                                   : fmt::format("95% interval {:.1f} to {:.1f}%", 100.0 * (1.0 - row.high),
                                                 100.0 * (1.0 - row.low));
  if (!std::isnan(row.low) && row.low <= 1.0 && row.high >= 1.0)
    return fmt::format("is as fast as LayerNorm's within the noise ({:+.1f}%, {})", speedup, interval);
  return fmt::format("is {:.1f}% {} than LayerNorm's ({})", std::fabs(speedup), speedup >= 0 ? "faster" : "slower",
                     interval);
}

}  // namespace

const PairedRow* PairedTimes::find(const std::string& impl, const std::string& norm) const {
  for (const PairedRow& r : rows)
    if (r.impl == impl && r.norm == norm) return &r;
  return nullptr;
}

PairedTimes read_paired_timing(const std::filesystem::path& path) {
  std::ifstream in(path);
  check(in.good(), "paired timing: cannot read {}: {}", path.string(), std::strerror(errno));
  PairedTimes times;
  std::string text, model, model_line;  // a file times one model: find() would take another's row unseen
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.empty() || text[0] != '{') continue;
    const nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
    const bool ok = !line.is_discarded() && line.is_object() && line.contains("impl") && line["impl"].is_string() &&
                    line.contains("norm") && line["norm"].is_string() && line.contains("ms_per_step") &&
                    line["ms_per_step"].is_number() && line.contains("ratio_vs_layernorm");
    check(ok, "paired timing: {} line {} is not a bench_norm_impl line", path.string(), line_no);
    if (line.contains("model") && line["model"].is_string()) {
      const std::string name = line["model"].get<std::string>();
      if (model.empty()) model = name, model_line = std::to_string(line_no);
      check(name == model, "paired timing: {} times two models ({} on line {}, {} on line {}); give one model's lines",
            path.string(), model, model_line, name, line_no);
    }
    PairedRow r;
    r.impl = line["impl"].get<std::string>();
    r.norm = line["norm"].get<std::string>();
    r.threads = static_cast<int>(number_or_missing(line, "threads"));
    r.pairs = static_cast<int>(number_or_missing(line, "pairs"));
    r.ms_per_step = line["ms_per_step"].get<double>();
    r.ratio = number_or_missing(line, "ratio_vs_layernorm");
    r.low = number_or_missing(line, "ci95_low");
    r.high = number_or_missing(line, "ci95_high");
    r.composed_vs_fused = number_or_missing(line, "composed_vs_fused");
    r.cf_low = number_or_missing(line, "cf_ci95_low");
    r.cf_high = number_or_missing(line, "cf_ci95_high");
    times.rows.push_back(r);
  }
  check(!times.rows.empty(), "paired timing: {} holds no bench_norm_impl line", path.string());
  return times;
}

std::string speedup_with_interval(const PairedRow& row) {
  if (row.norm == "layernorm") return "(reference)";
  if (std::isnan(row.low)) return fmt::format("{:.1f}%", 100.0 * (1.0 - row.ratio));
  return fmt::format("{:.1f}% ({:.1f} to {:.1f})", 100.0 * (1.0 - row.ratio), 100.0 * (1.0 - row.high),
                     100.0 * (1.0 - row.low));
}

std::string paired_timing_explanation(const PairedTimes& times) {
  const PairedRow* fused = times.find("fused", "rmsnorm");
  const PairedRow* composed = times.find("composed", "rmsnorm");
  if (fused == nullptr && composed == nullptr) return "";
  const PairedRow& any = fused ? *fused : *composed;
  std::string out = fmt::format(
      "How to read the time columns: each norm's training step against LayerNorm's of the same implementation, "
      "timed in pairs in one process ({} rounds, {} thread{}), as a speedup (T_LayerNorm − T) / T_LayerNorm with "
      "its 95% interval.",
      any.pairs, any.threads, any.threads == 1 ? "" : "s");
  for (const char* impl : {"composed", "fused"}) {
    std::string clauses;
    for (const char* norm : {"rmsnorm", "prmsnorm"})
      if (const PairedRow* row = times.find(impl, norm))
        clauses += fmt::format("{}{}'s step {}", clauses.empty() ? "" : ", and ", display_name(norm), verdict(*row));
    if (clauses.empty()) continue;
    out += std::string(impl) == "composed"
               ? fmt::format(" Composed from ops, as the paper's frameworks wrote the norms, {}.", clauses)
               : fmt::format(" With our fused kernels, {}.", clauses);
  }
  const bool composed_saves = composed != nullptr && !std::isnan(composed->high) && composed->high < 1.0;
  const bool fusing_closes_gap = fused == nullptr || fused->ratio > composed->ratio;
  if (composed_saves && fusing_closes_gap)
    out += " Built from ops, LayerNorm makes more passes over memory than RMSNorm (its mean and its subtraction of "
           "the mean, each with its own backward), and that is where the paper's speedups come from; fused into one "
           "kernel each, both norms read and write the same bytes, and what is left between them is the per-row "
           "arithmetic, a small part of a training step.";
  else if (composed != nullptr && !std::isnan(composed->high) && !composed_saves)
    out += " Here even composed RMSNorm does not save measurably against composed LayerNorm: the norms are too "
           "small a part of this model's step for their difference to show.";
  return out;
}

}  // namespace rg
