// Status and StatusOr: how every layer of tpusim reports an error. Codes follow XLA/TensorFlow; the
// printed form is the one users see in the seeds' logs, e.g.
//   ResourceExhaustedError: Ran out of memory in memory space hbm; used: 9.0G; limit: 8.0G
// TypeError and ValueError are the Python-side classes the seeds show for bad infeed dtypes and
// dynamic shapes.
#pragma once

#include <cassert>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace tpu {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kResourceExhausted,
  kDeadlineExceeded,
  kFailedPrecondition,
  kUnimplemented,
  kInternal,
  kAborted,
  kOutOfRange,
  kTypeError,
  kValueError,
};

// The class name printed before the message.
inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgumentError";
    case StatusCode::kNotFound: return "NotFoundError";
    case StatusCode::kResourceExhausted: return "ResourceExhaustedError";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceededError";
    case StatusCode::kFailedPrecondition: return "FailedPreconditionError";
    case StatusCode::kUnimplemented: return "UnimplementedError";
    case StatusCode::kInternal: return "InternalError";
    case StatusCode::kAborted: return "AbortedError";
    case StatusCode::kOutOfRange: return "OutOfRangeError";
    case StatusCode::kTypeError: return "TypeError";
    case StatusCode::kValueError: return "ValueError";
  }
  return "UnknownError";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const { return ok() ? "OK" : std::string(StatusCodeName(code_)) + ": " + message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status ResourceExhausted(std::string m) { return Status(StatusCode::kResourceExhausted, std::move(m)); }
inline Status DeadlineExceeded(std::string m) { return Status(StatusCode::kDeadlineExceeded, std::move(m)); }
inline Status FailedPrecondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
inline Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status Aborted(std::string m) { return Status(StatusCode::kAborted, std::move(m)); }
inline Status OutOfRange(std::string m) { return Status(StatusCode::kOutOfRange, std::move(m)); }
inline Status TypeError(std::string m) { return Status(StatusCode::kTypeError, std::move(m)); }
inline Status ValueError(std::string m) { return Status(StatusCode::kValueError, std::move(m)); }

inline std::ostream& operator<<(std::ostream& out, const Status& status) { return out << status.ToString(); }

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}  // NOLINT: implicit like absl::StatusOr
  StatusOr(T&& value) : value_(std::move(value)) {}  // NOLINT
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tpu

#define TPU_STATUS_CONCAT_INNER(a, b) a##b
#define TPU_STATUS_CONCAT(a, b) TPU_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define TPU_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::tpu::Status tpu_status_ = (expr);            \
    if (!tpu_status_.ok()) return tpu_status_;     \
  } while (0)

// `lhs = value of expr` (a StatusOr), or returns its Status from the enclosing function.
#define TPU_ASSIGN_OR_RETURN(lhs, expr) \
  TPU_ASSIGN_OR_RETURN_IMPL(TPU_STATUS_CONCAT(tpu_statusor_, __LINE__), lhs, expr)
#define TPU_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
