// tnbc's one error convention (docs/architecture.md, "Errors"):
//
//   - A function that can fail returns Status (nothing else to return) or Result<T> (a value or
//     why not). Both are [[nodiscard]]: an error cannot be dropped silently.
//   - The message is a complete sentence naming what failed and the object (file, variable,
//     collective); the caller adds its context in front (with_context) and decides what happens
//     next: fall back (run blocking), return the code to the program, or end the job.
//   - `code` is an MPI error code (MPI_ERR_*) where the error is one the program may see through
//     its communicator's error handler, else kFailed.
//   - No exception crosses a function declared in a header. A parser may throw inside its own
//     .cc file to unwind nested reading; its public function catches and returns a Result.
//   - Async-signal-safe code (the SIGSEGV handler, the timeout report) cannot build a Status:
//     it reports with log_raw() and ends the job.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace tnbc {

class [[nodiscard]] Status {
 public:
  static constexpr int kOk = 0;       // MPI_SUCCESS in every MPI library
  static constexpr int kFailed = -1;  // an error that is not an MPI error code

  Status() = default;
  static Status error(std::string message, int code = kFailed) {
    Status s;
    s.code_ = code == kOk ? kFailed : code;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return code_ == kOk; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CONTEXT: message" (an ok Status stays ok).
  Status with_context(const std::string& context) && {
    if (!ok()) message_ = context + ": " + message_;
    return std::move(*this);
  }

 private:
  int code_ = kOk;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status error) : status_(std::move(error)) {
    if (status_.ok()) status_ = Status::error("internal error: a Result made from an ok Status");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace tnbc
