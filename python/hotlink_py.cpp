// The Python package `hotlink` (pybind11): link object bytes to shared
// object bytes in-process, cache artifacts under the caller's keys, load
// them verified and hot-reload them. Addresses come back as ints for
// ctypes. Every failure is a hotlink.Error carrying hotlink's code; links,
// cache look-ups and loads run without the GIL.
#include "python/bindings.h"

#include "hotlink/cache.h"
#include "hotlink/signature.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"
#include "hotlink/hot_module.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace hotlink;
using namespace hotlink::python;

namespace {

Linker &default_linker() {
  static Linker *linker = new Linker(); // never destroyed: lives until exit
  return *linker;
}

template <class T> T take(Expected<T> e) {
  if (!e)
    raise(e.error());
  return std::move(e.value());
}

std::vector<std::uint8_t> bytes_of(const py::bytes &b) {
  std::string_view v = b;
  return std::vector<std::uint8_t>(v.begin(), v.end());
}

py::bytes to_bytes(const std::vector<std::uint8_t> &v) {
  return py::bytes(reinterpret_cast<const char *>(v.data()), v.size());
}

// --- Linking -------------------------------------------------------------------

// objects: bytes (named input0.o, ...), str or os.PathLike (a file), or a
// (name, bytes) pair.
std::vector<Input> inputs_of(const py::list &objects) {
  std::vector<Input> out;
  py::object fspath = py::module_::import("os").attr("fspath");
  std::size_t i = 0;
  for (py::handle h : objects) {
    std::string fallback = "input" + std::to_string(i++) + ".o";
    if (py::isinstance<py::bytes>(h)) {
      out.push_back(Input::memory(fallback, bytes_of(h.cast<py::bytes>())));
    } else if (py::isinstance<py::tuple>(h) && py::len(h) == 2) {
      auto t = h.cast<py::tuple>();
      out.push_back(Input::memory(t[0].cast<std::string>(), bytes_of(t[1].cast<py::bytes>())));
    } else {
      out.push_back(Input::file(fspath(h).cast<std::string>()));
    }
  }
  return out;
}

struct Result {
  LinkResult r;
};

Result do_link(Linker &linker, const py::list &objects, const std::optional<std::string> &target,
               const std::vector<std::string> &exports, const std::string &policy,
               const std::optional<std::string> &output, const std::vector<std::string> &libraries,
               const std::optional<std::string> &sysroot, const std::vector<std::string> &flags,
               const std::optional<std::string> &soname, bool bare, const std::optional<std::string> &mcpu,
               const std::string &device_libs) {
  LinkRequest req;
  req.inputs = inputs_of(objects);
  req.target = target.value_or("");
  // Names given with the default policy: exactly those names.
  req.exports = policy_of(!exports.empty() && policy == "entry-points" ? "list" : policy, exports);
  req.output_path = output.value_or("");
  req.libraries = libraries;
  req.sysroot = sysroot.value_or("");
  req.extra_flags = flags;
  req.elf.soname = soname.value_or("");
  if (bare)
    req.runtime = Runtime::None;
  req.gpu.processor = mcpu.value_or("");
  if (device_libs == "none")
    req.gpu.device_libs = DeviceLibs::None;
  else if (device_libs != "auto")
    req.gpu.device_libs_dir = device_libs;
  Result res;
  {
    py::gil_scoped_release unlocked;
    res.r = linker.service->link(req);
  }
  if (res.r.error)
    raise(*res.r.error);
  return res;
}

// --- The cache -------------------------------------------------------------------

struct Entry {
  cache::Entry entry;
  bool hit = false;
  std::vector<signature::PublicKey> trust;
};

struct Library {
  std::unique_ptr<loader::Library> lib;
  const loader::Library &get() const {
    if (!lib)
      raise(make_error(ErrorCode::BadRequest, "the library was closed", {}, {}, "load it again"));
    return *lib;
  }
};

cache::Artifact artifact_of(const py::handle &produced) {
  cache::Artifact a;
  if (py::isinstance<Result>(produced))
    return take(cache_artifact(produced.cast<const Result &>().r));
  if (py::isinstance<py::bytes>(produced)) {
    a.bytes = bytes_of(produced.cast<py::bytes>());
    a.name = "artifact.so";
    a.target = host_target();
    return a;
  }
  raise(make_error(ErrorCode::BadRequest, "the producer returned neither a hotlink.Result nor bytes", {}, {},
                   "return what hotlink.link() returned"));
}

struct Cache {
  std::shared_ptr<cache::Cache> cache;

  Entry get_or_build(const py::object &key, const py::function &producer) {
    std::string k = py::isinstance<py::bytes>(key) ? std::string(key.cast<py::bytes>()) : key.cast<std::string>();
    // The producer is Python: it runs with the GIL, which the cache's own
    // waiting (another process building the key) does not hold.
    std::optional<py::error_already_set> producer_error;
    Expected<cache::Fetched> fetched = [&] {
      py::gil_scoped_release unlocked;
      return cache->get_or_build(cache::Key::of_caller(k), [&]() -> Expected<cache::Artifact> {
        py::gil_scoped_acquire locked;
        try {
          return artifact_of(producer());
        } catch (py::error_already_set &e) {
          producer_error = std::move(e);
          return make_error(ErrorCode::LinkFailed, "the producer raised an exception", {}, {},
                            "see the exception re-raised from get_or_build");
        }
      });
    }();
    if (producer_error)
      throw std::move(*producer_error);
    cache::Fetched f = take(std::move(fetched));
    return Entry{std::move(f.entry), f.hit, cache->trust()};
  }
};

// --- Hot reload -------------------------------------------------------------------

struct Pin {
  loader::HotModule::Pin pin;
  const Module *module = nullptr;
};

std::uintptr_t address_of(const Pin &p, const py::object &entry) {
  if (!p.pin)
    raise(make_error(ErrorCode::BadRequest, "the pin holds no version", {}, {}, "reload() a version first"));
  int slot = -1;
  if (py::isinstance<py::int_>(entry)) {
    slot = entry.cast<int>();
  } else {
    std::string name = entry.cast<std::string>();
    for (std::size_t i = 0; i < p.module->names.size(); ++i)
      if (p.module->names[i] == name)
        slot = static_cast<int>(i);
    if (slot < 0)
      raise(make_error(ErrorCode::BadRequest, "no entry point registered by that name", {}, name,
                       "register it with HotModule.entry(name) before the first reload"));
  }
  void *a = p.pin.address(slot);
  if (!a)
    raise(make_error(ErrorCode::BadRequest, "no entry point at slot " + std::to_string(slot), {}, {},
                     "use the slot HotModule.entry() returned"));
  return reinterpret_cast<std::uintptr_t>(a);
}

// link()'s keyword arguments, in do_link's order, for Linker.link and the
// module's link.
template <class Define> void with_link_args(Define define) {
  define(py::arg("objects"), py::arg("target") = py::none(), py::arg("exports") = std::vector<std::string>{},
         py::arg("policy") = "entry-points", py::arg("output") = py::none(),
         py::arg("libraries") = std::vector<std::string>{}, py::arg("sysroot") = py::none(),
         py::arg("flags") = std::vector<std::string>{}, py::arg("soname") = py::none(), py::arg("bare") = false,
         py::arg("mcpu") = py::none(), py::arg("device_libs") = "auto");
}

constexpr const char *kLinkDoc =
    "Links `objects` (bytes, (name, bytes) pairs or paths) into a shared object for `target` (default: the "
    "host). exports= names exactly what to export (default: the entry-point convention f, f_argv, "
    "f_metadata). For a GPU target (amdgcn-amd-amdhsa), mcpu= is the AMD target ID ('gfx90a:xnack+'), the "
    "exports are the kernels, and device_libs= is 'auto', 'none' or the device libraries' folder. Returns a "
    "Result whose .artifact holds the bytes, or writes output= atomically.";

py::dict properties_of(const std::vector<std::pair<std::string, std::string>> &properties) {
  py::dict d;
  for (const auto &[key, value] : properties)
    d[py::str(key)] = value;
  return d;
}

// describe_artifact as plain Python: {"target_id": ..., "kernels": [{"name": ..., ...}]}.
py::dict description_of(const ArtifactDescription &description) {
  py::dict d = properties_of(description.properties);
  py::list exports;
  for (const ExportDetails &e : description.exports) {
    py::dict one = properties_of(e.properties);
    one["name"] = e.name;
    exports.append(one);
  }
  d["exports"] = exports;
  return d;
}

// The classes and functions of the package, in the order Python sees them.
void bind_results(py::module_ &m) {
  py::class_<Result>(m, "Result", "What a link returned.")
      .def_property_readonly("artifact",
                             [](const Result &r) -> py::object {
                               if (!r.r.artifact_path.empty())
                                 return py::none();
                               return to_bytes(r.r.artifact);
                             },
                             "The artifact's bytes (None when it was written to output=).")
      .def_property_readonly("path", [](const Result &r) { return r.r.artifact_path; })
      .def_property_readonly("name", [](const Result &r) { return r.r.artifact_name; })
      .def_property_readonly("target", [](const Result &r) { return r.r.target; })
      .def_property_readonly("exports", [](const Result &r) { return r.r.exports; })
      .def_property_readonly("cache", [](const Result &r) { return std::string(to_string(r.r.cache)); })
      .def_property_readonly("executed_by", [](const Result &r) { return r.r.executed_by; })
      .def_property_readonly("diagnostics",
                             [](const Result &r) {
                               py::list out;
                               for (const Diagnostic &d : r.r.diagnostics)
                                 out.append(py::make_tuple(d.severity == Severity::Error     ? "error"
                                                           : d.severity == Severity::Warning ? "warning"
                                                                                             : "note",
                                                           d.message));
                               return out;
                             })
      .def_property_readonly("timings_ms", [](const Result &r) {
        const Timings &t = r.r.timings;
        return py::dict(py::arg("validate") = t.validate_ms, py::arg("prepare") = t.prepare_ms,
                        py::arg("link") = t.link_ms, py::arg("cache") = t.cache_ms,
                        py::arg("publish") = t.publish_ms, py::arg("total") = t.total_ms);
      });

  py::class_<Library>(m, "Library", "A verified, mapped private copy of an artifact.")
      .def("symbol",
           [](const Library &l, const std::string &name) -> std::uintptr_t {
             void *p = l.get().symbol(name);
             if (!p)
               raise(make_error(ErrorCode::MissingExport, "the library does not export it", l.get().name(), name,
                                "check the exports (hotlink verify)"));
             return reinterpret_cast<std::uintptr_t>(p);
           },
           py::arg("name"), "The address of `name`, for ctypes (e.g. CFUNCTYPE(...)(address)).")
      .def_property_readonly("path", [](const Library &l) { return l.get().path(); })
      .def("close", [](Library &l) { l.lib.reset(); }, "Unmaps it: no call may be inside it any more.")
      .def("__enter__", [](Library &l) -> Library & { return l; }, py::return_value_policy::reference)
      .def("__exit__", [](Library &l, py::args) { l.lib.reset(); });

}

void bind_linking(py::module_ &m) {
  py::class_<Linker> linker_class(m, "Linker", "A link service, optionally answering from a cache.");
  linker_class
      .def(py::init([](const py::object &c) {
             std::shared_ptr<cache::Cache> shared;
             if (!c.is_none())
               shared = c.cast<Cache &>().cache;
             return Linker(std::move(shared));
           }),
           py::arg("cache") = py::none());
  with_link_args([&](auto... args) { linker_class.def("link", &do_link, args..., kLinkDoc); });
  with_link_args([&](auto... args) {
    m.def(
        "link",
        [](const py::list &objects, const std::optional<std::string> &target,
           const std::vector<std::string> &exports, const std::string &policy,
           const std::optional<std::string> &output, const std::vector<std::string> &libraries,
           const std::optional<std::string> &sysroot, const std::vector<std::string> &flags,
           const std::optional<std::string> &soname, bool bare, const std::optional<std::string> &mcpu,
           const std::string &device_libs) {
          return do_link(default_linker(), objects, target, exports, policy, output, libraries, sysroot, flags,
                         soname, bare, mcpu, device_libs);
        },
        args..., kLinkDoc);
  });

  m.def(
      "verify",
      [](const py::bytes &data, const std::string &name, const std::optional<std::string> &target,
         const std::optional<std::string> &mcpu, const std::vector<std::string> &expected) {
        std::vector<std::uint8_t> bytes = bytes_of(data);
        hotlink::VerifyOptions options;
        options.expected_exports = expected;
        options.processor = mcpu.value_or("");
        Expected<ArtifactDescription> described = [&]() -> Expected<ArtifactDescription> {
          py::gil_scoped_release unlocked;
          auto verified = verify_for_target(bytes, name, target.value_or(""), options);
          if (!verified)
            return verified.take_error();
          return describe_artifact(bytes, name);
        }();
        return description_of(take(std::move(described)));
      },
      py::arg("data"), py::arg("name") = "artifact", py::arg("target") = py::none(), py::arg("mcpu") = py::none(),
      py::arg("expected") = std::vector<std::string>{},
      "Checks `data` as `target`'s loader would before mapping it (default: this host; a GPU code object: "
      "mcpu='gfx90a', its metadata note, its kernels, no imports) and returns what it says of itself "
      "({'target_id': ..., 'exports': [{'name': ..., 'kernarg_segment_size': ...}]} for a code object). "
      "Loads nothing; raises hotlink.Error.");

}

void bind_cache_and_loading(py::module_ &m) {
  py::class_<Entry>(m, "Entry", "A cache entry.")
      .def_property_readonly("hit", [](const Entry &e) { return e.hit; })
      .def_property_readonly("artifact", [](const Entry &e) { return to_bytes(e.entry.artifact.bytes); })
      .def_property_readonly("name", [](const Entry &e) { return e.entry.artifact.name; })
      .def_property_readonly("blake3", [](const Entry &e) { return e.entry.manifest.blake3; })
      .def_property_readonly("build_ms", [](const Entry &e) { return e.entry.manifest.build_ms; })
      .def_property_readonly("exports", [](const Entry &e) { return e.entry.artifact.exports; })
      .def("load", [](const Entry &e) {
        Expected<std::unique_ptr<loader::Library>> lib = [&] {
          py::gil_scoped_release unlocked;
          return loader::load(e.entry, e.trust);
        }();
        return Library{take(std::move(lib))};
      }, "Loads it, checked against its manifest (and its signature when the cache trusts keys).");

  py::class_<Cache>(m, "Cache", "A cache directory shared safely by any number of processes.")
      .def(py::init([](const py::object &dir, std::uint64_t max_bytes, bool create,
                       const std::optional<std::string> &remote, const std::vector<std::string> &trusted_keys,
                       const std::optional<std::string> &sign_key, const std::optional<std::string> &remote_auth_file) {
             cache::Config config;
             config.dir = py::module_::import("os").attr("fspath")(dir).cast<std::string>();
             if (max_bytes)
               config.limits.max_bytes = max_bytes;
             config.create = create;
             for (const std::string &k : trusted_keys)
               config.trusted_keys.push_back(take(signature::read_public_key(k)));
             if (sign_key)
               config.sign_key = take(signature::read_secret_key(*sign_key));
             if (remote) {
               config.remote = cache::RemoteConfig{};
               config.remote->url = *remote;
               config.remote->auth_file = remote_auth_file.value_or("");
             }
             return Cache{take(cache::Cache::open(std::move(config)))};
           }),
           py::arg("dir"), py::arg("max_bytes") = 0, py::arg("create") = true, py::kw_only(),
           py::arg("remote") = py::none(), py::arg("trusted_keys") = std::vector<std::string>{},
           py::arg("sign_key") = py::none(), py::arg("remote_auth_file") = py::none(),
           "The cache in `dir`. `remote`: a store shared with other hosts (redis://, redis+cluster:// or "
           "http[s]:// URL), whose entries are used only when one of `trusted_keys` (public key files) signed "
           "them; with `sign_key` (a secret key file) what this process builds is signed and published. "
           "`remote_auth_file`: an http remote's credentials file (owner-only: 'Bearer TOKEN' or USER:PASSWORD).")
      .def("get_or_build", &Cache::get_or_build, py::arg("key"), py::arg("producer"),
           "The entry of `key` (str or bytes): from the cache when it holds a valid one, else producer() is "
           "called (once across processes asking at once) and what it returns (a Result or bytes) is stored.")
      .def("stats", [](const Cache &c) {
        cache::Stats s = c.cache->stats();
        return py::dict(py::arg("hits") = s.hits, py::arg("misses") = s.misses, py::arg("stores") = s.stores,
                        py::arg("entries") = s.entries, py::arg("bytes") = s.bytes,
                        py::arg("saved_ms") = s.saved_ms, py::arg("remote_hits") = s.remote_hits,
                        py::arg("remote_misses") = s.remote_misses, py::arg("remote_errors") = s.remote_errors,
                        py::arg("remote_refused") = s.remote_refused, py::arg("published") = s.published);
      })
      .def_property_readonly("dir", [](const Cache &c) { return c.cache->config().dir; });

  m.def(
      "load",
      [](const py::bytes &data, const std::string &name, const std::vector<std::string> &expected,
         const std::optional<std::string> &blake3) {
        std::vector<std::uint8_t> bytes = bytes_of(data);
        hotlink::VerifyOptions options;
        options.expected_exports = expected;
        options.blake3 = blake3.value_or("");
        Expected<std::unique_ptr<loader::Library>> lib = [&]() -> Expected<std::unique_ptr<loader::Library>> {
          py::gil_scoped_release unlocked;
          auto loaded = loader::load_verified(bytes, name, options);
          if (!loaded)
            return loaded.take_error();
          return std::move(loaded->library);
        }();
        return Library{take(std::move(lib))};
      },
      py::arg("data"), py::arg("name") = "library.so", py::arg("expected") = std::vector<std::string>{},
      py::arg("blake3") = py::none(),
      "Verifies `data` (a shared object for this host exporting `expected`) and maps a private copy.");

}

void bind_hot_reload(py::module_ &m) {
  py::class_<Pin>(m, "Pin", "One version held for a batch of calls (use as a context manager).")
      .def_property_readonly("version", [](const Pin &p) { return p.pin.version(); })
      .def("address", &address_of, py::arg("entry"), "The address of an entry (its name or slot) in this version.")
      .def("__enter__", [](Pin &p) -> Pin & { return p; }, py::return_value_policy::reference)
      .def("__exit__", [](Pin &p, py::args) { loader::HotModule::Pin released = std::move(p.pin); });

  py::class_<Module>(m, "HotModule", "A module that keeps serving calls while new versions replace it.")
      .def(py::init<>())
      .def("entry",
           [](Module &mod, const std::string &name) {
             auto e = mod.module->entry<void()>(name);
             if (!e)
               raise(e.error());
             int slot = e->slot();
             if (static_cast<std::size_t>(slot) >= mod.names.size())
               mod.names.resize(slot + 1);
             mod.names[slot] = name;
             return slot;
           },
           py::arg("name"), "Registers an entry point every version must export; returns its slot.")
      .def("reload",
           [](Module &mod, const py::object &source, const std::string &name) {
             std::optional<Error> err;
             if (py::isinstance<py::bytes>(source)) {
               std::vector<std::uint8_t> bytes = bytes_of(source.cast<py::bytes>());
               py::gil_scoped_release unlocked;
               err = mod.module->reload(bytes, name);
             } else {
               std::string path = py::module_::import("os").attr("fspath")(source).cast<std::string>();
               py::gil_scoped_release unlocked;
               err = mod.module->reload(path);
             }
             if (err)
               raise(*err);
             return mod.module->current()->number;
           },
           py::arg("source"), py::arg("name") = "module.so",
           "Verifies, maps and publishes a new version (bytes or a path); on failure the old one keeps "
           "serving and hotlink.Error says why. Returns the new version's number.")
      .def("rollback", [](Module &mod) {
        if (auto err = mod.module->rollback())
          raise(*err);
      })
      .def_property_readonly("version", [](const Module &mod) {
        auto c = mod.module->current();
        return c ? c->number : 0;
      })
      .def_property_readonly(
          "state",
          [](const Module &mod) {
            auto c = mod.module->current();
            loader::StateReport r = c ? c->state : loader::StateReport{};
            return py::dict(py::arg("carried") = r.carried, py::arg("reset") = r.reset,
                            py::arg("migrated") = r.migrated, py::arg("added") = r.added,
                            py::arg("dropped") = r.dropped, py::arg("warnings") = r.warnings);
          },
          "What the current version's reload did with the HOTLINK_STATE variables: "
          "{'carried': [...], 'reset', 'migrated', 'added', 'dropped', 'warnings'}.")
      .def("pin", [](const Module &mod) { return Pin{mod.module->pin(), &mod}; }, py::keep_alive<0, 1>())
      .def("address",
           [](const Module &mod, const py::object &entry) { return address_of(Pin{mod.module->pin(), &mod}, entry); },
           py::arg("entry"),
           "The current version's address of an entry, unpinned: call it only while no reload can unmap "
           "that version (use pin() otherwise).");
}

} // namespace

PYBIND11_MODULE(hotlink, m) {
  m.doc() = "Link JIT object files into shared objects in-process with lld, cache them, load them verified.";
  static py::exception<std::runtime_error> error(m, "Error");
  m.attr("Error").attr("__doc__") =
      "A hotlink failure: .code ('invalid-input', 'undefined-symbol', ...), .message, .input, .symbol, .hint.";

  m.attr("__version__") = version();
  m.def("version", [] { return py::dict(py::arg("hotlink") = version(), py::arg("lld") = lld_version(),
                                        py::arg("llvm") = llvm_version()); },
        "hotlink's, lld's and LLVM's versions.");
  m.def("host_target", &host_target, "The host's target triple as hotlink spells it.");

  bind_results(m);
  bind_linking(m);
  bind_cache_and_loading(m);
  bind_hot_reload(m);
  m.def("_default_linker", &default_linker, py::return_value_policy::reference,
        "The process's Linker, for the functions called without one.");
  // hotlink.Rebuilder lives in `_hotlink_rebuild` (bindings.h: its
  // libraries are libclang-cpp and libLLVM), imported on first use.
  m.def("__getattr__", [](const std::string &name) -> py::object {
    if (name == "Rebuilder")
      return py::module_::import("_hotlink_rebuild").attr("Rebuilder");
    throw py::attribute_error("module 'hotlink' has no attribute '" + name + "'");
  });
}
