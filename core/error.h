#pragma once
// Errors. Every public op validates its inputs and throws rg::Error with a
// message that names the op and the shapes involved, e.g.
//   "matmul: inner dimensions differ: a is [3, 4], b is [5, 2]".
#include <fmt/format.h>

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace rg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws Error(fmt::format(...)) when `ok` is false. The message is formatted
// only on failure, so checks cost a branch on the hot path, as long as the
// arguments cost nothing to pass: a shape as shape_of(x) (core/tensor.h) or
// x.shape(), never x.shape().str(), which builds a string every call.
template <class... Args>
inline void check(bool ok, fmt::format_string<Args...> message, Args&&... args) {
  if (!ok) [[unlikely]]
    throw Error(fmt::format(message, std::forward<Args>(args)...));
}

// What an exception says to a user, as one line. An rg::Error's message is
// already ours. A std::filesystem error is the library's own words
// ("filesystem error: status: File name too long [/a/b]"): it becomes what
// was done, the path and the cause ("cannot look at '/a/b': File name too
// long (...)"). Anything else is its what().
std::string error_message(const std::exception& e);

// Warnings: a likely mistake that cannot be refused, because a program may
// mean it (a trainable leaf that no optimizer updates, autograd/tape.h). Each
// is said once, by whoever raises it; the handler writes "rmsgrad warning: ..."
// to stderr unless a program installs its own. Returns the previous handler.
using WarningHandler = std::function<void(const std::string& message)>;
WarningHandler set_warning_handler(WarningHandler handler);
void warn(const std::string& message);

}  // namespace rg
