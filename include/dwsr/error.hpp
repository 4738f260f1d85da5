#pragma once
/// \file Errors a user can cause. Each message names the value and what was
/// expected; the CLI turns any dwsr::error into exit status 2 and one line.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dwsr {

/// Base of every error dwsr reports to users.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A value the user supplied is malformed or out of range (shape, parameter, operator name).
class invalid_input : public error {
 public:
  explicit invalid_input(const std::string& what) : error("invalid input: " + what) {}
};

/// A file could not be read or written, or its contents are corrupt.
class io_error : public error {
 public:
  explicit io_error(const std::string& what) : error("i/o error: " + what) {}
};

/// An allocation would exceed the memory budget of a context.
class out_of_memory : public error {
 public:
  out_of_memory(const std::string& what, std::uint64_t requested, std::uint64_t budget)
      : error("out of memory: " + what), requested_(requested), budget_(budget) {}
  /// Bytes the failing allocation asked for.
  std::uint64_t requested() const noexcept { return requested_; }
  /// The budget it would have exceeded.
  std::uint64_t budget() const noexcept { return budget_; }

 private:
  std::uint64_t requested_;
  std::uint64_t budget_;
};

/// A device (GPU) could not be used: no device, a driver or library failure.
class device_error : public error {
 public:
  explicit device_error(const std::string& what) : error("device error: " + what) {}
};

/// A run stopped because its caller asked it to (context_options::cancel), e.g. Ctrl-C in Python.
class cancelled : public error {
 public:
  explicit cancelled(const std::string& what) : error("cancelled: " + what) {}
};

}  // namespace dwsr
