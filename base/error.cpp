#include "hotlink/error.h"

#include <string>

namespace hotlink {

const char *to_string(ErrorCode code) {
  switch (code) {
  case ErrorCode::BadRequest: return "bad-request";
  case ErrorCode::InputNotFound: return "input-not-found";
  case ErrorCode::InvalidInput: return "invalid-input";
  case ErrorCode::FormatMismatch: return "format-mismatch";
  case ErrorCode::ArchMismatch: return "arch-mismatch";
  case ErrorCode::MixedFormats: return "mixed-formats";
  case ErrorCode::BadSymbolName: return "bad-symbol-name";
  case ErrorCode::MissingExport: return "missing-export";
  case ErrorCode::UndefinedSymbol: return "undefined-symbol";
  case ErrorCode::DuplicateSymbol: return "duplicate-symbol";
  case ErrorCode::OutputError: return "output-error";
  case ErrorCode::LinkFailed: return "link-failed";
  case ErrorCode::LinkerUnavailable: return "linker-unavailable";
  case ErrorCode::WorkerFailed: return "worker-failed";
  case ErrorCode::WorkerTimeout: return "worker-timeout";
  case ErrorCode::NotASharedObject: return "not-a-shared-object";
  case ErrorCode::HashMismatch: return "hash-mismatch";
  case ErrorCode::UnresolvedSymbol: return "unresolved-symbol";
  case ErrorCode::AbiMismatch: return "abi-mismatch";
  case ErrorCode::LoadFailed: return "load-failed";
  case ErrorCode::InitFailed: return "init-failed";
  case ErrorCode::StateMismatch: return "state-mismatch";
  case ErrorCode::StateBusy: return "state-busy";
  case ErrorCode::CompileFailed: return "compile-failed";
  case ErrorCode::CacheUnsafe: return "cache-unsafe";
  case ErrorCode::CacheError: return "cache-error";
  case ErrorCode::Unsigned: return "unsigned";
  case ErrorCode::UntrustedSigner: return "untrusted-signer";
  case ErrorCode::BadSignature: return "bad-signature";
  case ErrorCode::KeyError: return "key-error";
  case ErrorCode::Internal: return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string s = "error[";
  s += hotlink::to_string(code);
  s += "]: ";
  if (!input.empty())
    s += (code == ErrorCode::OutputError ? "output '" : "input '") + input + "': ";
  if (!symbol.empty())
    s += "'" + symbol + "': ";
  s += message;
  if (!hint.empty())
    s += " (hint: " + hint + ")";
  return s;
}

} // namespace hotlink
