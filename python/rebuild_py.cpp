// The extension module `_hotlink_rebuild`: hotlink.Rebuilder, which the
// `hotlink` module imports on first use (python/bindings.h says why). It
// links libhotlink-rebuild.so, and takes the HotModule and Linker objects
// of the `hotlink` module.
#include "python/bindings.h"

#include "hotlink/rebuild.h"

#include <pybind11/stl.h>

#include <chrono>
#include <optional>

namespace py = pybind11;
using namespace hotlink;
using namespace hotlink::python;

namespace {

struct PyRebuilder {
  std::unique_ptr<rebuild::Rebuilder> rb;
  rebuild::Rebuilder &get() const {
    if (!rb)
      raise(make_error(ErrorCode::BadRequest, "the rebuilder was closed", {}, {}, "make another"));
    return *rb;
  }
};

LinkService &service_of(const py::object &linker) {
  py::object l = linker.is_none() ? py::module_::import("hotlink").attr("_default_linker")() : linker;
  return *l.cast<Linker &>().service;
}

} // namespace

PYBIND11_MODULE(_hotlink_rebuild, m) {
  m.doc() = "hotlink.Rebuilder (imported by the hotlink module on first use).";
  py::class_<PyRebuilder>(m, "Rebuilder",
                          "Watches a module's sources (and the headers they include), recompiles what changed "
                          "with the compilation database's command, links in-process and reloads the module. "
                          "A compile error or a refused link keeps the old version serving (last_error).")
      .def(py::init([](Module &mod, const std::string &compile_commands, const std::vector<std::string> &sources,
                       const std::vector<std::string> &exports, const std::string &policy,
                       const std::optional<std::string> &target, const std::vector<std::string> &libraries,
                       const py::object &linker, const std::string &name) {
             rebuild::Options o;
             o.compile_commands = compile_commands;
             o.sources = sources;
             o.request.exports = policy_of(!exports.empty() && policy == "entry-points" ? "list" : policy, exports);
             o.request.target = target.value_or("");
             o.request.libraries = libraries;
             o.name = name;
             LinkService &service = service_of(linker);
             py::gil_scoped_release unlocked; // the first build runs here
             return PyRebuilder{std::make_unique<rebuild::Rebuilder>(*mod.module, service, std::move(o))};
           }),
           py::arg("module"), py::arg("compile_commands"), py::arg("sources"),
           py::arg("exports") = std::vector<std::string>{}, py::arg("policy") = "entry-points",
           py::arg("target") = py::none(), py::arg("libraries") = std::vector<std::string>{},
           py::arg("linker") = py::none(), py::arg("name") = "module.so", py::keep_alive<1, 2>(),
           py::keep_alive<1, 9>())
      .def_property_readonly("rebuilds", [](const PyRebuilder &r) { return r.get().rebuilds(); })
      .def_property_readonly("failures", [](const PyRebuilder &r) { return r.get().failures(); })
      .def_property_readonly("compiles", [](const PyRebuilder &r) { return r.get().compiles(); })
      .def_property_readonly(
          "last_error",
          [](const PyRebuilder &r) -> py::object {
            auto e = r.get().last_error();
            return e ? error_object(*e) : py::none();
          },
          "None, or the hotlink.Error of the last build (a compile error names FILE:LINE).")
      .def(
          "wait",
          [](const PyRebuilder &r, std::uint64_t seen, double timeout) {
            rebuild::Rebuilder &rb = r.get();
            py::gil_scoped_release unlocked;
            return rb.wait_past(seen, std::chrono::milliseconds(static_cast<long long>(timeout * 1000)));
          },
          py::arg("seen"), py::arg("timeout") = 30.0,
          "Waits until rebuilds + failures exceeds `seen`; returns whether it did within `timeout` seconds.")
      .def(
          "close",
          [](PyRebuilder &r) {
            py::gil_scoped_release unlocked;
            r.rb.reset();
          },
          "Stops watching.");
}
