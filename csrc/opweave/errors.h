// Error codes and the exception the core throws. They mirror TensorFlow's canonical codes so the
// Python layer can map each one to the matching opweave.errors.*Error class.
#pragma once

#include <stdexcept>
#include <string>

namespace opweave {

enum class ErrorCode : int {
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// The one exception type the core throws for anticipated failures. Thread-safe to copy.
//
//   throw OpError(ErrorCode::kInvalidArgument, "matmul: inner dimensions differ: [2,3] vs [4,5]");
class OpError : public std::runtime_error {
 public:
  OpError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void throw_invalid_argument(const std::string& message) {
  throw OpError(ErrorCode::kInvalidArgument, message);
}

}  // namespace opweave
