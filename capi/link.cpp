// The C API's link service, requests and results, over hotlink/link_service.h
// (in libhotlink.so: forwarded to the linker module, linker/module/client.cpp).
#include "capi/handles.h"
#include "capi/objects.h"

#include <cstring>

using namespace hotlink;
using capi::str;

extern "C" {

// --- The service -------------------------------------------------------------

hotlink_service *hotlink_service_create(const hotlink_service_options *options) {
  return capi::guarded(nullptr, static_cast<hotlink_service *>(nullptr), [&] {
    ServiceConfig config;
    if (options) {
      config.workers = options->workers;
      if (options->cache)
        config.cache = options->cache->cache;
      config.warm_up = options->warm_up != 0;
      config.lld_on_own_thread = options->lld_on_own_thread != 0;
    }
    auto *s = new hotlink_service;
    s->service = std::make_unique<LinkService>(std::move(config));
    return s;
  });
}

void hotlink_service_destroy(hotlink_service *service) { delete service; }

// --- Requests ------------------------------------------------------------------

hotlink_request *hotlink_request_create(void) {
  return capi::guarded(nullptr, static_cast<hotlink_request *>(nullptr), [] { return new hotlink_request; });
}

void hotlink_request_destroy(hotlink_request *request) { delete request; }

#define HOTLINK_SET(request, ...)                                                                            \
  do {                                                                                                       \
    if (request)                                                                                             \
      capi::quietly(request->broken, [&] { __VA_ARGS__; });                                                 \
  } while (0)

void hotlink_request_set_target(hotlink_request *r, const char *triple) { HOTLINK_SET(r, r->request.target = str(triple)); }

void hotlink_request_add_input(hotlink_request *r, const char *name, const void *data, size_t size) {
  HOTLINK_SET(r, {
    if (!data && size)
      r->invalid = "hotlink_request_add_input: 'data' is NULL with a size of " + std::to_string(size);
    else
      r->request.inputs.push_back(Input::memory(name && *name ? name : "input.o", data, size));
  });
}

void hotlink_request_add_input_file(hotlink_request *r, const char *path) {
  HOTLINK_SET(r, {
    if (!path || !*path)
      r->invalid = std::string("hotlink_request_add_input_file: 'path' is ") + (path ? "empty" : "NULL");
    else
      r->request.inputs.push_back(Input::file(path));
  });
}

void hotlink_request_set_exports(hotlink_request *r, hotlink_export_mode mode, const char *const *names,
                                 size_t count) {
  HOTLINK_SET(r, {
    ExportPolicy &p = r->request.exports;
    switch (mode) {
    case HOTLINK_EXPORT_ENTRY_POINTS: p.mode = ExportPolicy::Mode::EntryPoints; break;
    case HOTLINK_EXPORT_ALL: p.mode = ExportPolicy::Mode::All; break;
    case HOTLINK_EXPORT_LIST: p.mode = ExportPolicy::Mode::List; break;
    case HOTLINK_EXPORT_NONE: p.mode = ExportPolicy::Mode::None; break;
    default: r->invalid = "hotlink_request_set_exports: unknown mode " + std::to_string(int(mode)); break;
    }
    p.names.clear();
    if (!names && count)
      r->invalid = "hotlink_request_set_exports: 'names' is NULL with a count of " + std::to_string(count);
    for (size_t i = 0; names && i < count && r->invalid.empty(); ++i) {
      if (!names[i] || !*names[i])
        r->invalid = "hotlink_request_set_exports: names[" + std::to_string(i) + "] is " +
                     (names[i] ? "empty" : "NULL");
      else
        p.names.push_back(names[i]);
    }
  });
}

void hotlink_request_set_output(hotlink_request *r, const char *path) { HOTLINK_SET(r, r->request.output_path = str(path)); }
void hotlink_request_set_def_output(hotlink_request *r, const char *path) { HOTLINK_SET(r, r->request.coff.def_output = str(path)); }
void hotlink_request_set_implib_output(hotlink_request *r, const char *path) {
  HOTLINK_SET(r, r->request.coff.implib_output = str(path));
}
void hotlink_request_set_pdb_output(hotlink_request *r, const char *path) { HOTLINK_SET(r, r->request.coff.pdb_output = str(path)); }
void hotlink_request_add_library(hotlink_request *r, const char *name) {
  HOTLINK_SET(r, {
    if (!name || !*name)
      r->invalid = std::string("hotlink_request_add_library: 'name' is ") + (name ? "empty" : "NULL");
    else
      r->request.libraries.push_back(name);
  });
}
void hotlink_request_add_library_path(hotlink_request *r, const char *dir) {
  HOTLINK_SET(r, r->request.library_paths.push_back(str(dir)));
}
void hotlink_request_set_sysroot(hotlink_request *r, const char *path) { HOTLINK_SET(r, r->request.sysroot = str(path)); }
void hotlink_request_set_soname(hotlink_request *r, const char *soname) { HOTLINK_SET(r, r->request.elf.soname = str(soname)); }
void hotlink_request_set_bare(hotlink_request *r, int bare) {
  HOTLINK_SET(r, r->request.runtime = bare ? Runtime::None : Runtime::Auto);
}
void hotlink_request_set_processor(hotlink_request *r, const char *target_id) {
  HOTLINK_SET(r, r->request.gpu.processor = str(target_id));
}
void hotlink_request_set_device_libs(hotlink_request *r, hotlink_device_libs mode, const char *dir) {
  HOTLINK_SET(r, {
    switch (mode) {
    case HOTLINK_DEVICE_LIBS_AUTO: r->request.gpu.device_libs = DeviceLibs::Auto; break;
    case HOTLINK_DEVICE_LIBS_NONE: r->request.gpu.device_libs = DeviceLibs::None; break;
    default: r->invalid = "hotlink_request_set_device_libs: unknown mode " + std::to_string(int(mode)); break;
    }
    r->request.gpu.device_libs_dir = str(dir);
  });
}
void hotlink_request_add_flag(hotlink_request *r, const char *flag) { HOTLINK_SET(r, r->request.extra_flags.push_back(str(flag))); }
void hotlink_request_set_execution(hotlink_request *r, hotlink_execution execution) {
  HOTLINK_SET(r, {
    switch (execution) {
    case HOTLINK_EXECUTION_AUTO: r->request.execution = Execution::Auto; break;
    case HOTLINK_EXECUTION_IN_PROCESS: r->request.execution = Execution::InProcess; break;
    case HOTLINK_EXECUTION_ISOLATED: r->request.execution = Execution::Isolated; break;
    default: r->invalid = "hotlink_request_set_execution: unknown value " + std::to_string(int(execution)); break;
    }
  });
}
void hotlink_request_set_use_cache(hotlink_request *r, int use_cache) { HOTLINK_SET(r, r->request.use_cache = use_cache != 0); }

#undef HOTLINK_SET

// --- Linking ---------------------------------------------------------------------

hotlink_result *hotlink_link(hotlink_service *service, const hotlink_request *request) {
  return capi::guarded(nullptr, static_cast<hotlink_result *>(nullptr), [&] {
    auto *res = new hotlink_result;
    auto fail = [&](Error e) {
      res->result.error = std::move(e);
      res->finish();
      return res;
    };
    if (!service)
      return fail(capi::bad_argument("hotlink_link", "service"));
    if (!request)
      return fail(capi::bad_argument("hotlink_link", "request"));
    if (request->broken)
      return fail(capi::internal_error("out of memory while the request was built"));
    if (!request->invalid.empty())
      return fail(Error{ErrorCode::BadRequest, request->invalid, {}, {}, "check the call named"});
    try {
      res->result = service->service->link(request->request);
    } catch (...) {
      delete res;
      throw;
    }
    res->finish();
    return res;
  });
}

void hotlink_result_destroy(hotlink_result *result) { delete result; }

const hotlink_error *hotlink_result_error(const hotlink_result *r) { return r ? r->error.get() : nullptr; }

const uint8_t *hotlink_result_bytes(const hotlink_result *r, size_t *size) {
  bool has = r && r->result.ok() && r->result.artifact_path.empty();
  if (size)
    *size = has ? r->result.artifact.size() : 0;
  return has ? r->result.artifact.data() : nullptr;
}

const char *hotlink_result_path(const hotlink_result *r) { return r ? r->result.artifact_path.c_str() : ""; }
const char *hotlink_result_name(const hotlink_result *r) { return r ? r->result.artifact_name.c_str() : ""; }
const char *hotlink_result_target(const hotlink_result *r) { return r ? r->result.target.c_str() : ""; }

size_t hotlink_result_export_count(const hotlink_result *r) { return r ? r->result.exports.size() : 0; }

const char *hotlink_result_export(const hotlink_result *r, size_t index) {
  return r && index < r->result.exports.size() ? r->result.exports[index].c_str() : nullptr;
}

size_t hotlink_result_diagnostic_count(const hotlink_result *r) { return r ? r->result.diagnostics.size() : 0; }

hotlink_severity hotlink_result_diagnostic(const hotlink_result *r, size_t index, const char **message,
                                           const char **file, const char **symbol) {
  const Diagnostic *d = r && index < r->result.diagnostics.size() ? &r->result.diagnostics[index] : nullptr;
  if (message)
    *message = d ? d->message.c_str() : "";
  if (file)
    *file = d ? d->file.c_str() : "";
  if (symbol)
    *symbol = d ? d->symbol.c_str() : "";
  if (!d)
    return HOTLINK_NOTE;
  switch (d->severity) {
  case Severity::Error: return HOTLINK_ERROR;
  case Severity::Warning: return HOTLINK_WARNING;
  case Severity::Note: break;
  }
  return HOTLINK_NOTE;
}

void hotlink_result_timings(const hotlink_result *r, hotlink_timings *t) {
  if (!t)
    return;
  std::memset(t, 0, sizeof *t);
  if (!r)
    return;
  const Timings &x = r->result.timings;
  *t = hotlink_timings{x.validate_ms, x.prepare_ms, x.link_ms, x.cache_ms, x.publish_ms, x.total_ms};
}

const char *hotlink_result_cache(const hotlink_result *r) { return r ? to_string(r->result.cache) : "off"; }
const char *hotlink_result_executed_by(const hotlink_result *r) { return r ? r->result.executed_by.c_str() : ""; }

} // extern "C"
