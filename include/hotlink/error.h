// hotlink's error value, shared by every module.
//
// Contract: a fallible hotlink function returns `Expected<T>` (or a result
// struct carrying `std::optional<Error>`); it never prints, never throws
// across the API and never exits the process. An Error says what failed
// (code + message), which input and which symbol or flag caused it, and
// what the user can do about it (hint).
#pragma once

#include <string>
#include <utility>
#include <variant>

// What libhotlink.so (libhotlink.dll) exports of the C++ API: hotlink
// builds with hidden visibility, and every public class and function is
// marked with this. HOTLINK_HIDDEN keeps a public class's private Impl out
// of it. On Windows the DLL's own sources export what is marked; a program
// using it imports through libhotlink.dll.a (MinGW imports functions and
// data by itself).
#ifndef HOTLINK_API
#if defined(_WIN32) && defined(HOTLINK_BUILDING_DLL)
#define HOTLINK_API __declspec(dllexport)
#elif defined(_WIN32)
#define HOTLINK_API
#else
#define HOTLINK_API __attribute__((visibility("default")))
#endif
#endif
#ifndef HOTLINK_HIDDEN
#if defined(_WIN32)
#define HOTLINK_HIDDEN
#else
#define HOTLINK_HIDDEN __attribute__((visibility("hidden")))
#endif
#endif

namespace hotlink {

enum class ErrorCode {
  BadRequest,        // the request itself is malformed (unknown target, bad flag)
  InputNotFound,     // an input path does not exist or cannot be read
  InvalidInput,      // empty, not an object, truncated, unsupported kind
  FormatMismatch,    // an input's object format differs from the target's
  ArchMismatch,      // an input's architecture differs from the target's
  MixedFormats,      // inputs of several formats in one link
  BadSymbolName,     // a name that could change the meaning of a script
  MissingExport,     // a requested export is not defined by any input
  UndefinedSymbol,   // the link left symbols undefined
  DuplicateSymbol,   // two inputs define the same strong symbol
  OutputError,       // the output cannot be written or published
  LinkFailed,        // lld reported another error
  LinkerUnavailable, // in-process lld refused to run again and no worker
  WorkerFailed,      // the out-of-process worker crashed or misbehaved
  WorkerTimeout,     // the worker did not answer within the timeout
  NotASharedObject,  // loader: an object, executable or unknown file
  HashMismatch,      // loader: the bytes are not the expected ones
  UnresolvedSymbol,  // loader: an import the process cannot provide
  AbiMismatch,       // loader: f_metadata() differs from what the host expects
  LoadFailed,        // loader: the dynamic loader refused the image
  InitFailed,        // loader: the on_load hook refused the new version
  CacheUnsafe,       // cache: the directory is not private to this user
  CacheError,        // cache: the directory or an entry cannot be used
  Unsigned,          // signature: no signature, where one is required
  UntrustedSigner,   // signature: signed, but by no trusted key
  BadSignature,      // signature: it does not verify, or the statement is malformed
  KeyError,          // signature: a key file is unreadable, malformed or unsafe
  Internal,          // a bug in hotlink; please report
  // Appended after Internal, so the C API's numbers stay as they were.
  StateMismatch,     // loader: a state variable cannot be carried into the new version
  StateBusy,         // loader: calls stayed inside the old version past the drain timeout
  CompileFailed,     // rebuild: the compiler refused a source
};

HOTLINK_API const char *to_string(ErrorCode code);

struct HOTLINK_API Error {
  ErrorCode code = ErrorCode::Internal;
  std::string message; // what failed
  std::string input;   // the input (name or path) that caused it, if any;
                       // for OutputError, the output
  std::string symbol;  // the symbol or flag that caused it, if any
  std::string hint;    // what to do about it

  // "error[missing-export]: input 'k.o': symbol 'f': ... (hint: ...)"
  std::string to_string() const;
};

// A value or an Error. Deliberately tiny: check with ok(), then use value()
// or error().
template <class T> class Expected {
public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Error error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T &value() { return std::get<0>(v_); }
  const T &value() const { return std::get<0>(v_); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() { return value(); }
  const Error &error() const { return std::get<1>(v_); }
  Error take_error() { return std::move(std::get<1>(v_)); }

private:
  std::variant<T, Error> v_;
};

HOTLINK_API inline Error make_error(ErrorCode code, std::string message,
                        std::string input = {}, std::string symbol = {},
                        std::string hint = {}) {
  return Error{code, std::move(message), std::move(input), std::move(symbol),
               std::move(hint)};
}

} // namespace hotlink
