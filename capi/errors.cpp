// The C API's errors and version strings.
#include "capi/handles.h"

#include "hotlink/link.h"

using namespace hotlink;

extern "C" {

hotlink_status hotlink_error_code(const hotlink_error *error) {
  return error ? capi::status_of(error->error.code) : HOTLINK_OK;
}
const char *hotlink_error_message(const hotlink_error *error) { return error ? error->text.c_str() : ""; }
const char *hotlink_error_input(const hotlink_error *error) { return error ? error->error.input.c_str() : ""; }
const char *hotlink_error_symbol(const hotlink_error *error) { return error ? error->error.symbol.c_str() : ""; }
const char *hotlink_error_hint(const hotlink_error *error) { return error ? error->error.hint.c_str() : ""; }
void hotlink_error_free(hotlink_error *error) { delete error; }

const char *hotlink_status_name(hotlink_status code) {
  if (code == HOTLINK_OK)
    return "ok";
  if (code < HOTLINK_OK || code > HOTLINK_COMPILE_FAILED)
    return "unknown";
  return to_string(static_cast<ErrorCode>(static_cast<int>(code) - 1));
}

// Computed once; static storage for the process's life.
const char *hotlink_version(void) {
  static const std::string v = hotlink::version();
  return v.c_str();
}
const char *hotlink_lld_version(void) {
  static const std::string v = hotlink::lld_version();
  return v.c_str();
}
const char *hotlink_llvm_version(void) {
  static const std::string v = hotlink::llvm_version();
  return v.c_str();
}
const char *hotlink_host_target(void) {
  static const std::string v = hotlink::host_target();
  return v.c_str();
}

} // extern "C"
