#include "rmsgrad/experiments/common/training_progress.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

constexpr const char* kFormat = "rmsgrad training checkpoint 1";

// The whole text must be the number: "12abc" and "" are errors, not 12 and 0.
template <class Integer>
Integer parse_integer(const Checkpoint& c, const std::string& key, const std::string& text) {
  Integer value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  check(error == std::errc() && end == text.data() + text.size(),
        "checkpoint {}: metadata '{}' = '{}' is not a whole number", c.source, key, text);
  return value;
}

int64_t non_negative(const Checkpoint& c, const std::string& key) {
  const int64_t value = parse_integer<int64_t>(c, key, c.meta(key));
  check(value >= 0, "checkpoint {}: metadata '{}' = {} is negative", c.source, key, value);
  return value;
}

double finite_number(const Checkpoint& c, const std::string& key) {
  const std::string& text = c.meta(key);
  char* end = nullptr;
  const double value = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  check(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value),
        "checkpoint {}: metadata '{}' = '{}' is not a finite number", c.source, key, text);
  return value;
}

}  // namespace

void write_training_progress(const TrainingProgress& progress, Checkpoint& c) {
  c.metadata["format"] = kFormat;
  c.metadata["step"] = std::to_string(progress.step);
  c.metadata["epoch"] = std::to_string(progress.epoch);
  c.metadata["best_metric"] = fmt::format("{:.17g}", progress.best_metric);
  c.metadata["train_seconds"] = fmt::format("{:.17g}", progress.train_seconds);
  for (const auto& [name, gen] : progress.generators)
    c.metadata["rng." + name] = fmt::format("{} {}", gen->seed(), gen->offset());
  if (progress.cursor) c.metadata["data_cursor"] = progress.cursor->state().to_string();
}

void read_training_progress(const Checkpoint& c, TrainingProgress& progress) {
  check(c.metadata.count("format") && c.metadata.at("format") == kFormat,
        "checkpoint {}: not a training checkpoint of this program", c.source);
  progress.step = non_negative(c, "step");
  progress.epoch = non_negative(c, "epoch");
  progress.best_metric = finite_number(c, "best_metric");
  progress.train_seconds = finite_number(c, "train_seconds");
  for (auto& [name, gen] : progress.generators) {
    const std::string key = "rng." + name, &text = c.meta(key);
    const size_t space = text.find(' ');
    check(space != std::string::npos, "checkpoint {}: bad generator state for '{}': '{}' is not '<seed> <offset>'",
          c.source, name, text);
    gen->set_state(parse_integer<uint64_t>(c, key, text.substr(0, space)),
                   parse_integer<uint64_t>(c, key, text.substr(space + 1)));
  }
  if (progress.cursor) progress.cursor->restore(CursorState::from_string(c.meta("data_cursor")));
}

}  // namespace rg
