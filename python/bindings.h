// What the two extension modules share: `hotlink` (python/hotlink_py.cpp)
// and `_hotlink_rebuild` (python/rebuild_py.cpp), which `hotlink`
// imports on the first use of hotlink.Rebuilder, so that `import hotlink`
// maps libhotlink.so alone and not the Rebuilder's libclang-cpp and
// libLLVM. The types both modules pass to each other are defined here, in
// a named namespace: pybind11 finds a type registered by the other module
// by its C++ type, and types of an anonymous namespace are never equal
// across shared objects.
#pragma once

#include "hotlink/export_policy.h"
#include "hotlink/hot_module.h"
#include "hotlink/link_service.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

namespace hotlink::python {

namespace py = pybind11;

// --- Errors -----------------------------------------------------------------

// hotlink.Error, registered by the `hotlink` module.
inline py::object error_class() { return py::module_::import("hotlink").attr("Error"); }

// A hotlink.Error instance, to raise or to return (Rebuilder.last_error).
inline py::object error_object(const Error &e) {
  py::object exc = error_class()(e.to_string());
  exc.attr("code") = to_string(e.code);
  exc.attr("message") = e.message;
  exc.attr("input") = e.input;
  exc.attr("symbol") = e.symbol;
  exc.attr("hint") = e.hint;
  return exc;
}

[[noreturn]] inline void raise(const Error &e) {
  PyErr_SetObject(error_class().ptr(), error_object(e).ptr());
  throw py::error_already_set();
}

inline exports::ExportPolicy policy_of(const std::string &policy, const std::vector<std::string> &exports) {
  exports::ExportPolicy p;
  if (!exports::parse_mode(policy, p.mode))
    raise(make_error(ErrorCode::BadRequest, "unknown export policy '" + policy + "'", {}, "policy",
                     "use entry-points, all, list or none"));
  p.names = exports;
  return p;
}

// --- Shared types ------------------------------------------------------------

// hotlink.Linker. One service per process unless the caller makes its own
// Linker: lld is one context per process anyway (hotlink._default_linker).
struct Linker {
  std::shared_ptr<LinkService> service;
  explicit Linker(std::shared_ptr<cache::Cache> cache = nullptr) {
    ServiceConfig config;
    config.cache = std::move(cache);
    service = std::make_shared<LinkService>(std::move(config));
  }
};

// hotlink.HotModule.
struct Module {
  std::unique_ptr<loader::HotModule> module = std::make_unique<loader::HotModule>();
  std::vector<std::string> names; // by slot
};

} // namespace hotlink::python
