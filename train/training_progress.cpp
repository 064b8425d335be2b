#include "rmsgrad/train/training_progress.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

const std::string& value_of(const Metadata& metadata, const std::string& source, const std::string& key) {
  const auto it = metadata.find(key);
  check(it != metadata.end(), "checkpoint {}: no '{}' in its metadata; it is not a checkpoint of the trainer",
        source, key);
  return it->second;
}

// The whole text must be the number: "12abc" and "" are errors, not 12 and 0.
int64_t non_negative(const Metadata& metadata, const std::string& source, const std::string& key) {
  const std::string& text = value_of(metadata, source, key);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  check(error == std::errc() && end == text.data() + text.size(),
        "checkpoint {}: metadata '{}' = '{}' is not a whole number", source, key, text);
  check(value >= 0, "checkpoint {}: metadata '{}' = {} is negative", source, key, value);
  return value;
}

double finite_number(const Metadata& metadata, const std::string& source, const std::string& key) {
  const std::string& text = value_of(metadata, source, key);
  char* end = nullptr;
  const double value = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  check(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value),
        "checkpoint {}: metadata '{}' = '{}' is not a finite number", source, key, text);
  return value;
}

}  // namespace

Metadata progress_metadata(const TrainingProgress& progress) {
  Metadata m;
  m["step"] = std::to_string(progress.step);
  m["epoch"] = std::to_string(progress.epoch);
  m["best_metric"] = fmt::format("{:.17g}", progress.best_metric);
  m["train_seconds"] = fmt::format("{:.17g}", progress.train_seconds);
  if (progress.cursor) m["data_cursor"] = progress.cursor->to_string();
  m["interval_loss"] = fmt::format("{:.17g}", progress.interval_loss);
  m["interval_steps"] = std::to_string(progress.interval_steps);
  nlohmann::ordered_json sums = nlohmann::ordered_json::object();
  for (const auto& [name, sum] : progress.interval_sums) sums[name] = fmt::format("{:.17g}", sum);
  m["interval_sums"] = sums.dump();
  if (progress.metrics_lines) m["metrics_lines"] = std::to_string(*progress.metrics_lines);
  return m;
}

TrainingProgress read_training_progress(const Metadata& metadata, const std::string& source) {
  TrainingProgress progress;
  progress.step = non_negative(metadata, source, "step");
  progress.epoch = non_negative(metadata, source, "epoch");
  progress.best_metric = finite_number(metadata, source, "best_metric");
  progress.train_seconds = finite_number(metadata, source, "train_seconds");
  if (const auto it = metadata.find("data_cursor"); it != metadata.end()) {
    try {
      progress.cursor = CursorState::from_string(it->second);
    } catch (const Error& e) {
      throw Error(fmt::format("checkpoint {}: metadata 'data_cursor': {}", source, e.what()));
    }
  }
  if (metadata.count("metrics_lines")) progress.metrics_lines = non_negative(metadata, source, "metrics_lines");
  // Checkpoints written before the interval was kept have none: the first
  // line after resuming them averages the steps since the checkpoint.
  if (metadata.count("interval_loss")) {
    progress.interval_loss = finite_number(metadata, source, "interval_loss");
    progress.interval_steps = non_negative(metadata, source, "interval_steps");
    const nlohmann::json sums = nlohmann::json::parse(value_of(metadata, source, "interval_sums"), nullptr, false);
    check(sums.is_object(), "checkpoint {}: metadata 'interval_sums' is not a JSON object", source);
    for (const auto& [name, text] : sums.items()) {
      check(text.is_string(), "checkpoint {}: metadata 'interval_sums': '{}' is not a number's text", source, name);
      progress.interval_sums[name] = finite_number({{"interval_sums." + name, text.get<std::string>()}}, source,
                                                   "interval_sums." + name);
    }
  }
  return progress;
}

}  // namespace rg
