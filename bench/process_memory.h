#pragma once
// This process's memory as the kernel counts it, from /proc/self/status:
// VmRSS (resident now) and VmHWM (the peak resident size, "high water mark").
// What the benchmarks compare against PyTorch's twins, which read the same.
#include <fstream>
#include <string>

namespace rg::bench {

// A field of /proc/self/status in MB ("VmRSS", "VmHWM"); -1 when absent.
inline double status_mb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return -1.0;
}

inline double rss_mb() { return status_mb("VmRSS"); }
inline double peak_rss_mb() { return status_mb("VmHWM"); }

}  // namespace rg::bench
