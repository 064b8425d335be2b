#pragma once
// Looking at paths without std::filesystem's exceptions. fs::exists(p) and
// its kin throw "filesystem error: status: Permission denied [p]" for a path
// they cannot look at (a folder without permission on the way, a name too
// long, a loop of links); these say what is there, and throw rg::Error
// naming the path and the cause otherwise.
#include <filesystem>
#include <vector>

namespace rg {

// What is at `path`, through links: file_type::not_found when nothing is.
std::filesystem::file_status status_of(const std::filesystem::path& path);
inline bool path_exists(const std::filesystem::path& path) { return std::filesystem::exists(status_of(path)); }
inline bool is_folder(const std::filesystem::path& path) { return std::filesystem::is_directory(status_of(path)); }
inline bool is_file(const std::filesystem::path& path) { return std::filesystem::is_regular_file(status_of(path)); }

// A folder's entries, in the order the system lists them.
std::vector<std::filesystem::directory_entry> entries_of(const std::filesystem::path& folder);

}  // namespace rg
