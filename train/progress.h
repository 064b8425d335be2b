#pragma once
// A one-line progress bar with rate and ETA for long loops:
//
//   train [##########..........]  52%   5200/10000   37.4 steps/s  ETA 00:02:08
//
// It redraws in place with '\r', at most ten times a second, and only when
// stdout is a terminal; in a pipe or a CI log it prints nothing, so logs keep
// only the fixed-width lines of the Run. Log lines printed while a bar is up
// erase it first (clear_progress_line), and the next update draws it again.
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace rg {

class ProgressBar {
 public:
  // Draws on stdout when stdout is a terminal; otherwise does nothing.
  explicit ProgressBar(int64_t total, std::string label = "");
  // Draws on `out` when `enabled` (for tests and for other streams).
  ProgressBar(int64_t total, std::string label, std::ostream& out, bool enabled);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of `total` steps are complete. The rate counts from the first
  // update, so a resumed run's rate is not inflated by the steps it skipped.
  void update(int64_t done);
  void finish();  // draws the final state and ends the line
  bool enabled() const { return enabled_; }

 private:
  using Clock = std::chrono::steady_clock;
  void draw(int64_t done, double seconds);

  int64_t total_;
  std::string label_;
  std::ostream* out_;
  bool enabled_;
  bool started_ = false;
  bool finished_ = false;
  int64_t first_done_ = 0;
  int64_t last_done_ = 0;
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

// The text of one bar, without '\r' (exposed for tests).
std::string progress_line(const std::string& label, int64_t done, int64_t total, double steps_per_second);

// Erases a bar that is on screen, so a log line can be printed in its place.
void clear_progress_line();

// 00:02:08; past a day "1d 03:04:05".
std::string format_duration(double seconds);

}  // namespace rg
