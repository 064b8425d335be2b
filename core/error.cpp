#include "rmsgrad/core/error.h"

#include <cstdio>
#include <mutex>

namespace rg {

namespace {
std::mutex g_warning_mutex;
WarningHandler g_warning_handler;  // empty: stderr
}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard lock(g_warning_mutex);
  std::swap(g_warning_handler, handler);
  return handler;
}

void warn(const std::string& message) {
  std::lock_guard lock(g_warning_mutex);
  if (g_warning_handler) {
    g_warning_handler(message);
    return;
  }
  std::fprintf(stderr, "rmsgrad warning: %s\n", message.c_str());
  std::fflush(stderr);
}

}  // namespace rg
