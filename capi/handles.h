// The C API's handles (include/hotlink/hotlink.h) and the guard every entry
// point runs in: a C caller cannot catch a C++ exception, so none leaves.
#pragma once

#include "hotlink/hotlink.h"

#include "hotlink/error.h"

#include <exception>
#include <new>
#include <string>
#include <utility>

struct hotlink_error {
  hotlink::Error error;
  std::string text; // error.to_string(), kept for hotlink_error_message
};

namespace hotlink::capi {

inline hotlink_status status_of(ErrorCode code) {
  static_assert(static_cast<int>(ErrorCode::BadRequest) + 1 == HOTLINK_BAD_REQUEST, "codes in order");
  static_assert(static_cast<int>(ErrorCode::Internal) + 1 == HOTLINK_INTERNAL, "codes in order");
  static_assert(static_cast<int>(ErrorCode::CompileFailed) + 1 == HOTLINK_COMPILE_FAILED, "codes in order");
  return static_cast<hotlink_status>(static_cast<int>(code) + 1);
}

// A new hotlink_error, or nullptr when there is no memory left for one.
inline hotlink_error *new_error(Error error) noexcept {
  try {
    auto *e = new hotlink_error{std::move(error), {}};
    e->text = e->error.to_string();
    return e;
  } catch (...) {
    return nullptr;
  }
}

// Hands `error` to the caller when it asked for errors; returns `code`.
inline hotlink_status report(hotlink_error **out, Error error) noexcept {
  hotlink_status code = status_of(error.code);
  if (out)
    *out = new_error(std::move(error));
  return code;
}

inline Error internal_error(const char *what) {
  return Error{ErrorCode::Internal, std::string("hotlink's C API caught: ") + what, {}, {},
               "please report this; a bad_alloc means the process ran out of memory"};
}

// Runs `body`; an exception it throws becomes HOTLINK_INTERNAL in *out and
// `fallback` is returned.
template <class R, class F> R guarded(hotlink_error **out, R fallback, F &&body) noexcept {
  try {
    return body();
  } catch (const std::exception &e) {
    if (out)
      *out = new_error(internal_error(e.what()));
  } catch (...) {
    if (out)
      *out = new_error(internal_error("an unknown exception"));
  }
  return fallback;
}

// For setters that cannot report: an exception (bad_alloc) sets `broken`,
// which the handle's next fallible call reports.
template <class F> void quietly(bool &broken, F &&body) noexcept {
  try {
    body();
  } catch (...) {
    broken = true;
  }
}

inline std::string str(const char *s) { return s ? std::string(s) : std::string(); }

inline Error bad_argument(const char *function, const char *argument) {
  return Error{ErrorCode::BadRequest, std::string(function) + ": '" + argument + "' is NULL", {}, argument,
               "pass a valid handle or pointer"};
}

} // namespace hotlink::capi
