#include "rmsgrad/experiments/common/file_status.h"

#include "rmsgrad/core/error.h"

namespace rg {

namespace fs = std::filesystem;

fs::file_status status_of(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // sets ec for nothing there, too
  // Said as core/error.h says any std::filesystem error: "cannot look at '<path>': <cause>".
  if (ec && status.type() != fs::file_type::not_found)
    throw Error(error_message(fs::filesystem_error("status", path, ec)));
  return status;
}

std::vector<fs::directory_entry> entries_of(const fs::path& folder) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  if (ec) throw Error(error_message(fs::filesystem_error("directory iterator cannot open directory", folder, ec)));
  return entries;
}

}  // namespace rg
