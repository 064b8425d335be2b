#include "rmsgrad/core/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/core/error.h"

namespace rg {

using json = nlohmann::json;

const Tensor* Checkpoint::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

const std::string& Checkpoint::meta(const std::string& key) const {
  auto it = metadata.find(key);
  check(it != metadata.end(), "checkpoint {}: metadata has no '{}'", source.empty() ? "(in memory)" : source, key);
  return it->second;
}

namespace {

// A header array of whole numbers of type T. Each element's type is checked
// before it is converted: nlohmann converts -1.48 to an unsigned integer
// with undefined behaviour (found by fuzz/checkpoint_fuzzer), and 1e30 to any
// integer alike.
template <class T>
std::vector<T> whole_numbers(const json& array, const std::string& path, const std::string& name, const char* field) {
  check(array.is_array(), "checkpoint {}: tensor '{}' has a {} that is not a list", path, name, field);
  std::vector<T> out;
  for (const json& item : array) {
    const bool fits = std::is_signed_v<T> ? item.is_number_integer() &&
                                                (!item.is_number_unsigned() ||
                                                 item.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
                                          : item.is_number_unsigned();
    check(fits, "checkpoint {}: tensor '{}' has {} {}; expected whole numbers{}", path, name, field, array.dump(),
          std::is_signed_v<T> ? "" : " >= 0");
    out.push_back(item.get<T>());
  }
  return out;
}

// A checkpoint's file, open for reading. Only a regular file is read: a
// FIFO would make open() wait for a writer for ever, so the file is opened
// with O_NONBLOCK (which returns at once) and refused after fstat says what
// it is; a device or a folder is no checkpoint either.
struct ReadOnlyFile {
  int fd = -1;
  uint64_t size = 0;

  explicit ReadOnlyFile(const std::string& path) {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    check(fd >= 0, "checkpoint {}: cannot open the file: {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int error = errno;
      ::close(fd);
      throw Error(fmt::format("checkpoint {}: cannot read the file: {}", path, std::strerror(error)));
    }
    if (!S_ISREG(st.st_mode)) {
      const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder"
                         : S_ISSOCK(st.st_mode) ? "a socket" : "a device";
      ::close(fd);
      throw Error(fmt::format("checkpoint {}: it is {}, not a regular file; a checkpoint is read from a file", path,
                              what));
    }
    size = static_cast<uint64_t>(st.st_size);
  }
  ~ReadOnlyFile() { ::close(fd); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  // `bytes` bytes at `offset`; false at an error or the end of the file.
  bool read_at(void* out, uint64_t bytes, uint64_t offset) const {
    char* p = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd, p, std::min<uint64_t>(bytes, uint64_t{1} << 30), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      bytes -= static_cast<uint64_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return true;
  }
};

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  static_assert(std::endian::native == std::endian::little, "checkpoints are little-endian");
  json header = json::object();
  header["__metadata__"] = checkpoint.metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& [name, t] : checkpoint.tensors) {
    check(names.insert(name).second, "checkpoint {}: tensor '{}' appears twice", path, name);
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", t.shape().dims()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const uint64_t length = text.size();

  // Written whole through a temporary file, never through a link (core/atomic_file.h).
  AtomicFile file(path);
  file.write(&length, sizeof(length));
  file.write(text.data(), text.size());
  for (const auto& [_, t] : checkpoint.tensors) file.write(t.data(), static_cast<size_t>(t.numel()) * sizeof(float));
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path) {
  const ReadOnlyFile in(path);
  const uint64_t file_size = in.size;
  check(file_size >= 8, "checkpoint {}: truncated: {} bytes, too short for the header length", path, file_size);
  uint64_t length = 0;
  check(in.read_at(&length, 8, 0), "checkpoint {}: cannot read the file: {}", path, std::strerror(errno));
  check(length <= file_size - 8, "checkpoint {}: bad header: header length {} exceeds the file size {}", path, length,
        file_size);
  std::string text(length, '\0');
  check(in.read_at(text.data(), length, 8), "checkpoint {}: cannot read the header: {}", path, std::strerror(errno));
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("checkpoint {}: bad header: not valid JSON ({})", path, e.what()));
  }
  check(header.is_object(), "checkpoint {}: bad header: not a JSON object", path);

  Checkpoint out;
  out.source = path;
  const uint64_t data_start = 8 + length, data_size = file_size - data_start;
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> ranges;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      check(entry.is_object(), "checkpoint {}: bad header: __metadata__ is not an object", path);
      for (auto& [k, v] : entry.items()) {
        check(v.is_string(), "checkpoint {}: bad header: metadata '{}' is not a string", path, k);
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    try {
      check(entry.at("dtype") == "F32", "checkpoint {}: tensor '{}' has dtype {}, only F32 is supported", path, name,
            entry.at("dtype").dump());
      auto dims = whole_numbers<int64_t>(entry.at("shape"), path, name, "shape");
      auto offsets = whole_numbers<uint64_t>(entry.at("data_offsets"), path, name, "data_offsets");
      check(offsets.size() == 2 && offsets[0] <= offsets[1], "checkpoint {}: tensor '{}' has bad data_offsets", path,
            name);
      check(offsets[1] <= data_size, "checkpoint {}: truncated: tensor '{}' ends at byte {} of a {}-byte data section",
            path, name, offsets[1], data_size);
      // The shape may claim any element count; it must fit in the bytes the
      // file holds before anything is allocated for it.
      check(dims.size() <= static_cast<size_t>(Shape::kMaxRank), "checkpoint {}: tensor '{}' has rank {}, more than {}",
            path, name, dims.size(), Shape::kMaxRank);
      uint64_t count = 1;
      for (int64_t d : dims) {
        check(d >= 0, "checkpoint {}: tensor '{}' has a negative dimension {}", path, name, d);
        const uint64_t size = static_cast<uint64_t>(d);
        check(size == 0 || count <= data_size / sizeof(float) / size,
              "checkpoint {}: tensor '{}' of shape {} needs more bytes than the {}-byte data section holds", path, name,
              entry.at("shape").dump(), data_size);
        count *= size;
      }
      Shape shape(dims);
      check(offsets[1] - offsets[0] == count * sizeof(float),
            "checkpoint {}: tensor '{}' of shape {} needs {} bytes, its offsets span {}", path, name, shape,
            count * sizeof(float), offsets[1] - offsets[0]);
      ranges.emplace_back(offsets[0], offsets[1], name);
      Tensor t = Tensor::empty(shape);
      check(in.read_at(t.data(), offsets[1] - offsets[0], data_start + offsets[0]),
            "checkpoint {}: truncated while reading tensor '{}'", path, name);
      out.tensors.emplace_back(name, t);
    } catch (const json::exception& e) {
      throw Error(fmt::format("checkpoint {}: bad header entry for '{}': {}", path, name, e.what()));
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    check(std::get<0>(ranges[i]) >= std::get<1>(ranges[i - 1]), "checkpoint {}: tensors '{}' and '{}' overlap", path,
          std::get<2>(ranges[i - 1]), std::get<2>(ranges[i]));
  return out;
}

void restore_tensors(const Checkpoint& checkpoint, const std::string& prefix,
                     const std::vector<std::pair<std::string, Tensor>>& targets) {
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& [name, target] : targets) {
    const std::string key = prefix + name;
    expected.insert(key);
    const Tensor* t = checkpoint.find(key);
    if (!t) problems.push_back(fmt::format("missing tensor '{}'", key));
    else if (t->shape() != target.shape())
      problems.push_back(fmt::format("tensor '{}' has shape {} in the checkpoint, the model expects {}", key,
                                     t->shape(), target.shape()));
  }
  for (const auto& [name, _] : checkpoint.tensors)
    if (name.rfind(prefix, 0) == 0 && !expected.count(name))
      problems.push_back(fmt::format("extra tensor '{}' the model does not have", name));
  if (!problems.empty()) {
    // One line (a driver prints one "error:" line), the first few mismatches and how many more.
    constexpr size_t kShown = 8;
    std::string message = fmt::format("checkpoint {}: does not match the model:", checkpoint.source);
    for (size_t i = 0; i < std::min(problems.size(), kShown); ++i) message += (i ? "; " : " ") + problems[i];
    if (problems.size() > kShown) message += fmt::format("; and {} more", problems.size() - kShown);
    throw Error(message);
  }
  for (const auto& [name, target] : targets) {
    Tensor dst = target;
    dst.copy_from(*checkpoint.find(prefix + name));
  }
}

}  // namespace rg
