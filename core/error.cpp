#include "rmsgrad/core/error.h"

#include <climits>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string_view>

namespace rg {

namespace {
std::mutex g_warning_mutex;
WarningHandler g_warning_handler;  // empty: stderr

// A std::filesystem operation, as its error names it ("cannot create
// directories", "status", "directory iterator cannot open directory"), in
// the words of this project's messages.
std::string_view operation_in_our_words(std::string_view library_words) {
  auto has = [&](std::string_view part) { return library_words.find(part) != std::string_view::npos; };
  if (has("create director")) return "cannot create the folder";
  if (has("directory iterator")) return "cannot list the folder";
  if (has("symlink") || has("hard link")) return has("create") ? "cannot create the link" : "cannot read the link";
  if (has("remove")) return "cannot remove";
  if (has("rename")) return "cannot move";
  if (has("copy")) return "cannot copy";
  if (has("canonical") || has("absolute") || has("relative") || has("proximate")) return "cannot resolve the path";
  if (has("resize") || has("set ")) return "cannot change";
  return "cannot look at";  // status, file size, equivalence, free space, ...
}

std::string describe_filesystem_error(const std::filesystem::filesystem_error& e) {
  // what() is "filesystem error: <operation>: <cause> [<path1>] [<path2>]".
  std::string_view what = e.what();
  constexpr std::string_view kPrefix = "filesystem error: ";
  if (what.substr(0, kPrefix.size()) == kPrefix) what.remove_prefix(kPrefix.size());
  const std::string_view operation = operation_in_our_words(what.substr(0, what.find(": ")));
  std::string message(operation);
  if (!e.path1().empty()) message += " '" + e.path1().string() + "'";
  if (!e.path2().empty()) message += (operation == "cannot move" ? " to '" : " and '") + e.path2().string() + "'";
  message += ": " + e.code().message();
  if (e.code() == std::errc::filename_too_long)
    message += fmt::format(" (the limits are {} bytes for a path and {} for one name in it)", PATH_MAX - 1, NAME_MAX);
  return message;
}

}  // namespace

std::string error_message(const std::exception& e) {
  if (const auto* filesystem = dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    return describe_filesystem_error(*filesystem);
  return e.what();
}

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
