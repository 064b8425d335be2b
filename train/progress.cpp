// The progress bar (see progress.h).
#include "rmsgrad/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "rmsgrad/dist/process_group.h"

namespace rg {

namespace {

constexpr int kBarWidth = 20;
constexpr double kRedrawSeconds = 0.1;

// The stream a bar is currently drawn on, if any (at most one bar at a time
// is on screen: the one that drew last).
std::ostream* g_visible_bar = nullptr;

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  auto total = static_cast<int64_t>(seconds + 0.5);
  int64_t days = total / 86400, h = total / 3600 % 24, m = total / 60 % 60, s = total % 60;
  if (days > 0) return fmt::format("{}d {:02}:{:02}:{:02}", days, h, m, s);
  return fmt::format("{:02}:{:02}:{:02}", h, m, s);
}

std::string progress_line(const std::string& label, int64_t done, int64_t total, double steps_per_second) {
  double fraction = total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 1.0;
  int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar = std::string(filled, '#') + std::string(kBarWidth - filled, '.');
  int count_width = static_cast<int>(std::to_string(total).size());
  std::string rate = steps_per_second > 0 ? fmt::format("{:.1f} steps/s", steps_per_second) : "- steps/s";
  double eta = steps_per_second > 0 ? static_cast<double>(total - done) / steps_per_second : NAN;
  return fmt::format("{}{}[{}] {:3.0f}%  {:>{}}/{}  {}  ETA {}", label, label.empty() ? "" : " ", bar,
                     fraction * 100.0, done, count_width, total, rate, format_duration(eta));
}

void clear_progress_line() {
  if (!g_visible_bar) return;
  *g_visible_bar << "\r\033[K" << std::flush;  // to the line start, erase to its end
  g_visible_bar = nullptr;
}

ProgressBar::ProgressBar(int64_t total, std::string label)
    : ProgressBar(total, std::move(label), std::cout,
                  ::isatty(STDOUT_FILENO) == 1 && dist::ProcessGroup::world().writer()) {}  // one bar per job

ProgressBar::ProgressBar(int64_t total, std::string label, std::ostream& out, bool enabled)
    : total_(total), label_(std::move(label)), out_(&out), enabled_(enabled) {}

ProgressBar::~ProgressBar() {
  if (started_ && !finished_) finish();
}

void ProgressBar::update(int64_t done) {
  if (!enabled_) return;
  auto now = Clock::now();
  if (!started_) {
    started_ = true;
    first_done_ = done;
    start_ = now;
    last_draw_ = now;
  }
  last_done_ = done;
  double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (since_draw < kRedrawSeconds && done < total_ && done != first_done_) return;
  last_draw_ = now;
  draw(done, std::chrono::duration<double>(now - start_).count());
}

void ProgressBar::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (!started_) return;
  draw(last_done_, std::chrono::duration<double>(Clock::now() - start_).count());
  *out_ << '\n' << std::flush;
  g_visible_bar = nullptr;
}

void ProgressBar::draw(int64_t done, double seconds) {
  double rate = seconds > 0 ? static_cast<double>(done - first_done_) / seconds : 0.0;
  *out_ << "\r\033[K" << progress_line(label_, done, total_, rate) << std::flush;
  g_visible_bar = out_;
}

}  // namespace rg
