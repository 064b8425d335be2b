#include "rmsgrad/experiments/common/results_table.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/seed_statistics.h"

namespace rg {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> values) {
  if (values.empty()) return kMissing;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// The paper's row order; other labels sort after these.
int paper_rank(const std::string& label) {
  static const char* const order[] = {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"};
  for (int i = 0; i < static_cast<int>(std::size(order)); ++i)
    if (label == order[i]) return i;
  return static_cast<int>(std::size(order));
}

std::string time_header(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::Per1k: return "s per 1k steps";
    case TimeUnit::Per100: return "s per 0.1k steps";
    case TimeUnit::PerEpoch: return "s per epoch";
  }
  return "s";
}

std::string cell(double value, int decimals) {
  return std::isnan(value) ? std::string("–") : fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::vector<fs::path> find_run_dirs(const std::vector<std::string>& paths) {
  std::vector<fs::path> runs;
  for (const std::string& p : paths) {
    check(is_folder(p), "paper_table: {} is not a directory", p);
    if (is_file(fs::path(p) / "metrics.jsonl")) {
      runs.emplace_back(p);
      continue;
    }
    // A replaced-<time>/ folder holds an earlier run that --overwrite moved
    // aside: not this folder's run, and tabulated only when named itself.
    std::vector<fs::path> children, replaced;
    std::error_code ec;
    for (const fs::directory_entry& entry : entries_of(p))
      if (entry.is_directory(ec) && is_file(entry.path() / "metrics.jsonl"))
        (entry.path().filename().string().rfind("replaced-", 0) == 0 ? replaced : children).push_back(entry.path());
    check(!children.empty() || replaced.empty(), "paper_table: {} holds no run, only {} earlier run{} that --overwrite "
          "moved aside (replaced-*/); name one of those to tabulate it", p, replaced.size(),
          replaced.size() == 1 ? "" : "s");
    check(!children.empty(), "paper_table: {} holds no run (no metrics.jsonl in it or its subdirectories)", p);
    std::sort(children.begin(), children.end());
    runs.insert(runs.end(), children.begin(), children.end());
  }
  return runs;
}

RunSummary summarize_run(const fs::path& dir, const TableOptions& options) {
  RunSummary s;
  s.dir = dir;
  s.label = dir.filename().string();
  if (std::ifstream config(dir / "config.json"); config) {
    json c = json::parse(config, nullptr, false);
    if (!c.is_discarded() && c.contains(options.label_key)) {
      const json& value = c[options.label_key];
      if (value.is_string()) s.label = value.get<std::string>();
      if (value.is_number()) s.label = fmt::format("{}", value.get<double>());  // shortest exact: 4.0 → "4"
    }
    if (!c.is_discarded() && c.contains("seed") && c["seed"].is_number_integer()) s.seed = c["seed"].get<int64_t>();
  }
  const size_t per_split = options.metrics.size();
  s.metric.assign(options.splits.size() * per_split, kMissing);
  std::vector<double> per_1k;
  double steps_per_epoch = kMissing;
  const fs::path metrics = dir / "metrics.jsonl";
  std::ifstream in(metrics);
  check(in.good(), "paper_table: cannot read {}: {}", metrics.string(), std::strerror(errno));
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.empty()) continue;
    json line = json::parse(text, nullptr, false);
    check(!line.is_discarded() && line.is_object() && line.contains("split") && line.contains("step"),
          "paper_table: {} line {} is not a metrics object", metrics.string(), line_no);
    const std::string split = line["split"].get<std::string>();
    if (split == "train") {
      if (line.contains("sec_per_1k_steps") && line["sec_per_1k_steps"].is_number())
        per_1k.push_back(line["sec_per_1k_steps"].get<double>());
      if (line.contains("epoch") && line["epoch"].is_number() && line["epoch"].get<double>() > 0)
        steps_per_epoch = line["step"].get<double>() / line["epoch"].get<double>();
    }
    if (!options.splits.empty() && !options.metrics.empty() && split == options.splits[0] &&
        line.contains(options.metrics[0]) && line[options.metrics[0]].is_number()) {
      s.last_step = line["step"].get<int64_t>();
      const double value = line[options.metrics[0]].get<double>();
      const bool passed = options.higher_is_better ? value > options.target : value < options.target;
      if (s.target_step < 0 && passed && s.last_step > 0) {
        s.target_step = s.last_step;
        if (line.contains("time_sec") && line["time_sec"].is_number()) s.target_seconds = line["time_sec"].get<double>();
      }
    }
    for (size_t i = 0; i < options.splits.size(); ++i) {
      if (split != options.splits[i]) continue;
      for (size_t m = 0; m < per_split; ++m) {
        const std::string& name = options.metrics[m];
        if (line.contains(name) && line[name].is_number()) s.metric[i * per_split + m] = line[name].get<double>();
      }
    }
  }
  const double seconds_per_step = median(per_1k) / 1000.0;
  switch (options.time) {
    case TimeUnit::Per1k: s.seconds = seconds_per_step * 1000.0; break;
    case TimeUnit::Per100: s.seconds = seconds_per_step * 100.0; break;
    case TimeUnit::PerEpoch: s.seconds = seconds_per_step * steps_per_epoch; break;
  }
  return s;
}

namespace {

// Rows as a markdown table, the label left-aligned and numbers right-aligned;
// widths counted in characters, not bytes ("–" is three bytes of UTF-8).
std::string markdown(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> widths(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    widths[c] = width(header[c]);
    for (const auto& row : rows) widths[c] = std::max(widths[c], width(row[c]));
  }
  auto format_row = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - width(row[c]), ' ');
      out += ' ';
      if (c == 0) out += row[c], out += pad;
      else out += pad, out += row[c];
      out += " |";
    }
    return out + "\n";
  };
  std::string out = format_row(header) + "|";
  for (size_t w : widths) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows) out += format_row(row);
  return out;
}

// How headers name the reference row: "LayerNorm", or "preact-shift 0".
std::string reference_name(const TableOptions& options) {
  return options.reference == "layernorm" ? "LayerNorm" : options.label_key + " " + options.reference;
}

// Where in a paired ratio's 95% interval a step time is taken.
enum class RatioAt { Median, Low, High };

// A norm's fused step in seconds from paired timing, on the one definition of
// speedup the tables use: LayerNorm's median step × the median over rounds of
// the norm's step ÷ LayerNorm's (so speedup = 1 − that ratio), or × either end
// of the ratio's 95% interval. NaN without LayerNorm's row or the norm's.
double paired_step_seconds(const PairedTimes& paired, const std::string& label, RatioAt at) {
  const PairedRow* reference = paired.find("fused", "layernorm");
  const PairedRow* fused = paired.find("fused", label);
  if (reference == nullptr || fused == nullptr) return kMissing;
  const double ratio = at == RatioAt::Low ? fused->low : at == RatioAt::High ? fused->high : fused->ratio;
  return reference->ms_per_step / 1000.0 * (std::isnan(ratio) ? fused->ratio : ratio);
}

// The time columns of one row: from paired timing when given, else the
// run's (or the runs' mean) seconds and the speedup against the reference row's (LayerNorm's).
void add_time_cells(std::vector<std::string>& row, const std::string& label, double seconds, double reference,
                    const TableOptions& options) {
  if (const PairedTimes* paired = options.paired) {
    const PairedRow* fused = paired->find("fused", label);
    const PairedRow* composed = paired->find("composed", label);
    const double step = paired_step_seconds(*paired, label, RatioAt::Median);
    row.push_back(std::isnan(step) ? "–" : fmt::format("{:.1f}", 1000.0 * step));
    row.push_back(fused ? speedup_with_interval(*fused) : "–");
    row.push_back(composed ? speedup_with_interval(*composed) : "–");
    return;
  }
  row.push_back(cell(seconds, seconds < 10 ? 3 : 1));
  const bool has_speedup = !std::isnan(reference) && !std::isnan(seconds) && label != options.reference;
  row.push_back(has_speedup ? fmt::format("{:.1f}%", 100.0 * (reference - seconds) / reference) : "–");
}

void add_time_headers(std::vector<std::string>& header, const TableOptions& options) {
  if (options.paired != nullptr) {
    header.push_back("ms per step (fused, paired)");
    header.push_back("speedup fused (95% CI)");
    header.push_back("speedup composed (95% CI)");
  } else {
    header.push_back(time_header(options.time));
    header.push_back("speedup vs " + reference_name(options));
  }
}

// The steps-to-target columns: "valid error_pct < 5", "valid bleu > 36".
std::string target_text(const TableOptions& options) {
  return fmt::format("{} {} {} {}", options.splits.front(), options.metrics.front(),
                     options.higher_is_better ? ">" : "<", options.target);
}

// A difference in seconds with its sign and interval: whole seconds, or
// tenths when every figure is under 10 s, so that an interval that stops
// short of 0 does not print as reaching it ("-1.0 (-1.6 to -0.1)").
std::string signed_seconds(const PairedDifference& p) {
  const bool small =
      std::fabs(p.mean) < 10.0 && (std::isnan(p.low) || (std::fabs(p.low) < 10.0 && std::fabs(p.high) < 10.0));
  const auto one = [small](double v) {
    const double scale = small ? 10.0 : 1.0, rounded = std::round(v * scale) / scale;
    return rounded == 0.0 ? std::string(small ? "0.0" : "0") : fmt::format("{:+.{}f}", rounded, small ? 1 : 0);
  };
  return std::isnan(p.low) ? one(p.mean) : fmt::format("{} ({} to {})", one(p.mean), one(p.low), one(p.high));
}

// The training time to a run's target step: those steps × the fused step's
// paired time when paired timing is given (at the ratio's median or either
// end of its interval), else the run's own clock.
double seconds_to_target(const RunSummary& r, const TableOptions& options, RatioAt at = RatioAt::Median) {
  if (r.target_step < 0) return kMissing;
  if (options.paired == nullptr) return r.target_seconds;
  return static_cast<double>(r.target_step) * paired_step_seconds(*options.paired, r.label, at);
}

void add_target_cells(std::vector<std::string>& row, const RunSummary& r, const TableOptions& options) {
  if (std::isnan(options.target)) return;
  if (r.target_step < 0) {
    row.push_back(r.last_step < 0 ? "–" : fmt::format("> {}", r.last_step));
    row.push_back("–");
    return;
  }
  row.push_back(std::to_string(r.target_step));
  row.push_back(cell(seconds_to_target(r, options), 0));
}

// One or two lines on what the columns mean.
std::string legend_text(const TableOptions& options, bool several_seeds) {
  std::string quality;
  for (const std::string& split : options.splits)
    for (const std::string& metric : options.metrics)
      quality += fmt::format("{}`{} {}`", quality.empty() ? "" : ", ", split, metric);
  std::string out =
      several_seeds
          ? fmt::format("Columns: {} is the last evaluation's value, as mean ± sd over a label's seeds, and "
                        "`− {} (95% CI)` its difference from the {} run of the same seed, averaged, with a 95% "
                        "interval.",
                        quality, reference_name(options), reference_name(options))
          : fmt::format("Columns: {} is the value at each run's last evaluation.", quality);
  if (!std::isnan(options.target)) {
    const std::string clock = options.paired != nullptr ? " (those steps × the fused step's paired time; the "
                                                          "intervals hold both the seeds' spread and the step "
                                                          "time's: the union of the seeds' 95% intervals at either "
                                                          "end of the step ratio's, where it has one)"
                                                        : " (the run's own clock, evaluation excluded)";
    out += several_seeds
               ? fmt::format(" `reached {0}` counts the seeds whose validation passed it by their last evaluation; "
                             "`steps to it` is the first evaluated step after 0 at which it did (mean ± sd over those "
                             "seeds), `s to it` the training time to that step{1} (mean, 95% interval over those "
                             "seeds), and `− {2} s` its difference from the {2} run of the same seed, over the seeds "
                             "where both reached it.",
                             target_text(options), clock, reference_name(options))
               : fmt::format(" `steps to {}` is the first evaluated step after 0 at which it was {} {} "
                             "(\"> N\": not by its last evaluation, step N), and `s to reach it` the training time "
                             "to that step{}.",
                             target_text(options), options.higher_is_better ? "above" : "below", options.target,
                             clock);
  }
  if (options.paired != nullptr)
    out += fmt::format("\nThe time columns: `speedup` is (T_{0} − T) / T_{0} as the paper defines it, taken as 1 − "
                       "the median over interleaved rounds in one process of the step's time ÷ {0}'s, fused or "
                       "composed from ops, with its 95% interval; `ms per step` is {0}'s median fused step × that "
                       "same ratio, so that every time column says the same.",
                       reference_name(options));
  else
    out += fmt::format("\nThe time columns: `{}` is the median of the run's logged intervals{}; `speedup vs {}` is "
                       "(T_ref − T) / T_ref, T_ref being {}'s time.",
                       time_header(options.time), several_seeds ? " (mean over seeds)" : "", reference_name(options),
                       reference_name(options));
  return out;
}

// Runs with the same label (one norm, several seeds), in the paper's order;
// labels that are numbers (shifts) by value.
std::vector<std::vector<RunSummary>> group_by_label(std::vector<RunSummary> runs) {
  auto number = [](const std::string& label) {
    char* end = nullptr;
    const double v = std::strtod(label.c_str(), &end);
    return !label.empty() && *end == '\0' ? v : kMissing;
  };
  std::stable_sort(runs.begin(), runs.end(), [&](const RunSummary& a, const RunSummary& b) {
    const int ra = paper_rank(a.label), rb = paper_rank(b.label);
    if (ra != rb) return ra < rb;
    if (a.label == b.label) return a.seed < b.seed;
    const double na = number(a.label), nb = number(b.label);
    if (std::isnan(na) != std::isnan(nb)) return !std::isnan(na);  // numbers first
    return std::isnan(na) ? a.label < b.label : na < nb;
  });
  std::vector<std::vector<RunSummary>> groups;
  for (RunSummary& r : runs) {
    if (groups.empty() || groups.back().front().label != r.label) groups.emplace_back();
    groups.back().push_back(std::move(r));
  }
  return groups;
}

// One row per norm over its seeds: each metric's mean ± sd, and its paired
// difference from LayerNorm's run of the same seed with a 95% interval
// (experiments/common/seed_statistics.h).
std::string seeds_table(const std::vector<std::vector<RunSummary>>& groups, const TableOptions& options) {
  const std::vector<RunSummary>* reference = nullptr;
  for (const auto& g : groups)
    if (g.front().label == options.reference) reference = &g;
  for (const auto& g : groups)
    for (size_t a = 0; a < g.size(); ++a)
      for (size_t b = a + 1; b < g.size(); ++b)
        check(g[a].seed != g[b].seed,
              "paper_table: {} and {} are both {} {} with seed {}; a table takes one run per {} and seed",
              g[a].dir.string(), g[b].dir.string(), options.label_key, g[a].label, g[a].seed, options.label_key);
  std::vector<int64_t> all_seeds;
  for (const auto& g : groups)
    for (const RunSummary& r : g)
      if (std::find(all_seeds.begin(), all_seeds.end(), r.seed) == all_seeds.end()) all_seeds.push_back(r.seed);
  // One value per seed, in all_seeds' order, of a label's runs: NaN for a seed it lacks.
  auto per_seed = [&](const std::vector<RunSummary>& g, auto value_of) {
    std::vector<double> values;
    for (int64_t seed : all_seeds) {
      double v = kMissing;
      for (const RunSummary& r : g)
        if (r.seed == seed) v = value_of(r);
      values.push_back(v);
    }
    return values;
  };
  auto metric_of = [&](const std::vector<RunSummary>& g, size_t m) {
    return per_seed(g, [m](const RunSummary& r) { return r.metric[m]; });
  };
  // The steps or seconds to the target, NaN where a seed did not reach it.
  auto to_target = [&](const std::vector<RunSummary>& g, bool seconds, RatioAt at = RatioAt::Median) {
    return per_seed(g, [&](const RunSummary& r) {
      if (r.target_step < 0) return kMissing;
      return seconds ? seconds_to_target(r, options, at) : static_cast<double>(r.target_step);
    });
  };

  std::vector<std::string> header = {options.label_key, "seeds"};
  const bool has_target = !std::isnan(options.target);
  if (has_target) {
    header.push_back("reached " + target_text(options));
    header.push_back("steps to it (mean ± sd)");
    header.push_back("s to it (mean, 95% CI)");
    header.push_back("− " + reference_name(options) + " s (95% CI)");
  }
  for (const std::string& split : options.splits)
    for (const std::string& metric : options.metrics) {
      header.push_back(split + " " + metric + " (mean ± sd)");
      header.push_back("− " + reference_name(options) + " (95% CI)");
    }
  add_time_headers(header, options);
  std::vector<double> mean_seconds;
  for (const auto& g : groups) {
    std::vector<double> seconds;
    for (const RunSummary& r : g) seconds.push_back(r.seconds);
    mean_seconds.push_back(mean_and_spread(seconds).mean);
  }
  double reference_seconds = kMissing;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].front().label == options.reference) reference_seconds = mean_seconds[i];

  std::vector<std::vector<std::string>> rows;
  const int d = options.decimals;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    std::vector<std::string> row = {g.front().label, std::to_string(g.size())};
    if (has_target) {
      const std::vector<double> steps = to_target(g, false), seconds = to_target(g, true);
      const MeanAndSpread st = mean_and_spread(steps), sec = mean_and_spread(seconds);
      row.push_back(fmt::format("{} of {}", st.n, g.size()));
      row.push_back(st.n == 0 ? "–" : std::isnan(st.sd) ? cell(st.mean, 0)
                                                        : fmt::format("{:.0f} ± {:.0f}", st.mean, st.sd));
      // Both intervals: the union of the seeds' 95% intervals with every step
      // time at the low and at the high end of its paired ratio's interval
      // (the same interval twice with the runs' own clocks).
      const auto seeds_interval = [&](RatioAt at) {
        const MeanAndSpread e = mean_and_spread(to_target(g, true, at));
        const double half = e.n > 1 ? student_t_975(e.n - 1) * e.sd / std::sqrt(static_cast<double>(e.n)) : kMissing;
        return std::pair{e.mean - half, e.mean + half};
      };
      const auto [low_a, high_a] = seeds_interval(RatioAt::Low);
      const auto [low_b, high_b] = seeds_interval(RatioAt::High);
      const double low = std::min(low_a, low_b), high = std::max(high_a, high_b);
      row.push_back(sec.n == 0 ? "–"
                    : std::isnan(low) ? cell(sec.mean, 0)
                                      : fmt::format("{:.0f} ({:.0f} to {:.0f})", sec.mean, low, high));
      PairedDifference p;
      if (reference != nullptr && g.front().label != options.reference) {
        const std::vector<double> reference_seconds = to_target(*reference, true);
        p = paired_difference(seconds, reference_seconds);
        const PairedDifference a = paired_difference(to_target(g, true, RatioAt::Low), reference_seconds);
        const PairedDifference b = paired_difference(to_target(g, true, RatioAt::High), reference_seconds);
        if (!std::isnan(p.low)) p.low = std::min(a.low, b.low), p.high = std::max(a.high, b.high);
      }
      row.push_back(p.n == 0 ? "–" : signed_seconds(p));
    }
    for (size_t m = 0; m < g.front().metric.size(); ++m) {
      const std::vector<double> values = metric_of(g, m);
      const MeanAndSpread s = mean_and_spread(values);
      row.push_back(std::isnan(s.sd) ? cell(s.mean, d) : fmt::format("{:.{}f} ± {:.{}f}", s.mean, d, s.sd, d));
      if (reference == nullptr || g.front().label == options.reference) {
        row.push_back("–");
        continue;
      }
      const PairedDifference p = paired_difference(values, metric_of(*reference, m));
      row.push_back(p.n == 0 ? "–"
                    : std::isnan(p.low)
                        ? fmt::format("{:+.{}f}", p.mean, d)
                        : fmt::format("{:+.{}f} ({:+.{}f} to {:+.{}f})", p.mean, d, p.low, d, p.high, d));
    }
    add_time_cells(row, g.front().label, mean_seconds[i], reference_seconds, options);
    rows.push_back(row);
  }
  return markdown(header, rows);
}

}  // namespace

std::string results_table(const std::vector<fs::path>& dirs, const TableOptions& options, std::string* legend) {
  std::vector<RunSummary> runs;
  for (const fs::path& d : dirs) runs.push_back(summarize_run(d, options));
  const std::vector<std::vector<RunSummary>> groups = group_by_label(std::move(runs));
  for (const auto& g : groups)
    if (g.size() > 1) {
      if (legend != nullptr) *legend = legend_text(options, true);
      return seeds_table(groups, options);
    }
  if (legend != nullptr) *legend = legend_text(options, false);

  double reference = kMissing;
  for (const auto& g : groups)
    if (g.front().label == options.reference) reference = g.front().seconds;
  std::vector<std::string> header = {options.label_key};
  if (!std::isnan(options.target)) {
    header.push_back("steps to " + target_text(options));
    header.push_back("s to reach it");
  }
  for (const std::string& split : options.splits)
    for (const std::string& metric : options.metrics) header.push_back(split + " " + metric);
  add_time_headers(header, options);
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : groups) {
    const RunSummary& r = g.front();
    std::vector<std::string> row = {r.label};
    add_target_cells(row, r, options);
    for (double m : r.metric) row.push_back(cell(m, options.decimals));
    add_time_cells(row, r.label, r.seconds, reference, options);
    rows.push_back(row);
  }
  return markdown(header, rows);
}

}  // namespace rg
