// The runtime's side of the linker module (plugin.h), compiled into
// libhotlink.so alone: LinkService and the linker's free functions of the
// public API, each forwarded to libhotlink-linker-X.Y.so, which is loaded
// on the first call that needs it. Programs that link the linker's archive
// (the CLI, the tests) get the real definitions instead.
#include "base/own_module.h"
#include "linker/module/plugin.h"
#include "hotlink/verify_target.h"
#include "exports/artifacts.h"

#include <mutex>

namespace hotlink {

namespace linker_module {

namespace {

Expected<const Table *> load() {
  // Never closed: lld keeps state for the process's life.
  auto module = open_own_module({HOTLINK_LINKER_MODULE_FILE, kEnv, reinterpret_cast<const void *>(&linker),
                                 {HOTLINK_BUILD_LIBDIR, HOTLINK_INSTALL_LIBDIR}},
                                "linking", kSymbol,
                                "reinstall hotlink; the module needs LLVM 22's libraries (libllvm22)");
  if (!module) { // nothing links here, whatever else works
    Error e = module.take_error();
    e.code = ErrorCode::LinkerUnavailable;
#ifdef HOTLINK_LINKER_ABSENT_HINT // a build that makes no linker module (capi/CMakeLists.txt)
    e.hint = HOTLINK_LINKER_ABSENT_HINT;
#endif
    return e;
  }
  const Table *table = reinterpret_cast<EntryFn>(module->entry)();
  if (!table || !(table->stamp == stamp(HOTLINK_VERSION_STRING)))
    return foreign_module("the linker module", module->path, kEnv);
  return table;
}

} // namespace

Expected<const Table *> linker() {
  static const Expected<const Table *> table = load();
  return table;
}

} // namespace linker_module

// --- LinkService: the configuration, and the module's service made of it on
// the first call that links (warm_up: at once) ---------------------------------

struct HOTLINK_HIDDEN LinkService::Impl {
  ServiceConfig config;
  std::once_flag started;
  const linker_module::Table *linker = nullptr;
  LinkService *service = nullptr; // the module's
  std::optional<Error> failure;   // why it could not start

  ~Impl() {
    if (service)
      linker->destroy_service(service);
  }

  // False, with `failure` set, when the module or its service cannot start.
  bool start() {
    std::call_once(started, [&] {
      auto table = linker_module::linker();
      if (!table) {
        failure = table.take_error();
        return;
      }
      Error error;
      linker = *table;
      service = linker->create_service(config, &error);
      if (!service)
        failure = std::move(error);
    });
    return service != nullptr;
  }
};

LinkService::LinkService(ServiceConfig config) : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  if (impl_->config.warm_up)
    impl_->start();
}

LinkService::~LinkService() = default;

LinkResult LinkService::link(const LinkRequest &request) {
  if (!impl_->start()) {
    LinkResult r;
    r.error = *impl_->failure;
    return r;
  }
  return impl_->linker->link(*impl_->service, request);
}

std::future<LinkResult> LinkService::submit(LinkRequest request) {
  if (!impl_->start()) {
    std::promise<LinkResult> p;
    LinkResult r;
    r.error = *impl_->failure;
    p.set_value(std::move(r));
    return p.get_future();
  }
  return impl_->linker->submit(*impl_->service, std::move(request));
}

Expected<cache::Key> LinkService::cache_key(const LinkRequest &request) {
  if (!impl_->start())
    return *impl_->failure;
  return impl_->linker->cache_key(*impl_->service, request);
}

ServiceStats LinkService::stats() const {
  // Nothing linked yet when the module's service is not made.
  return impl_->service ? impl_->linker->stats(*impl_->service) : ServiceStats{};
}

bool LinkService::in_process_usable() {
  auto table = linker_module::linker();
  return table && (*table)->in_process_usable();
}

// --- The free functions ----------------------------------------------------------

std::optional<Error> set_host_llvm_options(const std::vector<std::string> &args) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->set_host_llvm_options(args);
}

Expected<cache::Artifact> cache_artifact(LinkResult result) {
  auto table = linker_module::linker(); // loaded: the result came from it
  if (!table)
    return table.take_error();
  return (*table)->cache_artifact(result);
}

// This host's checks in the runtime; another target's need its platform.
Expected<Verified> verify_for_target(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                     const std::string &target, VerifyOptions options) {
  if (target.empty())
    return verify(bytes, name, options);
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->verify_for_target(bytes, name, target, options);
}

Expected<ArtifactDescription> describe_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  // Only GPU code objects describe themselves (their platforms' describe):
  // a host artifact is answered here, without loading the linker.
  if (auto art = exports::read_artifact(bytes.data(), bytes.size(), name))
    if (art->arch != exports::Arch::AMDGCN && art->arch != exports::Arch::NVPTX64)
      return ArtifactDescription{};
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->describe_artifact(bytes, name);
}

Expected<ArtifactDescription> describe_device_code(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                   const std::string &target) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->describe_device_code(bytes, name, target);
}

Expected<bool> loads_here(const std::string &target) {
  if (target.empty()) // this host's artifacts load here
    return true;
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->loads_here(target);
}

Expected<TargetFormat> target_format(const std::string &triple) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->target_format(triple);
}

Expected<ImportLibrary> import_library_from_def(const std::string &def_text, const std::string &def_name,
                                                const std::string &machine, const std::string &dll_name, bool mingw) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->import_library_from_def(def_text, def_name, machine, dll_name, mingw);
}

// lld's own answer; "" when the module cannot load.
std::string lld_version() {
  auto table = linker_module::linker();
  return table ? (*table)->lld_version() : std::string();
}

// Empty when the module cannot load: nothing can be linked then.
std::vector<std::string> supported_targets() {
  auto table = linker_module::linker();
  return table ? (*table)->supported_targets() : std::vector<std::string>();
}

std::string triple_for(exports::Format format, exports::Arch arch) {
  auto table = linker_module::linker();
  return table ? (*table)->triple_for(format, arch) : std::string();
}

namespace exports {

// Artifacts of the formats the runtime does not read itself (image/).
Expected<ArtifactInfo> read_foreign_artifact(const void *data, std::size_t size, const std::string &name) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->read_artifact(data, size, name);
}

// Inputs are the linker's to read (LLVM's object and bitcode readers).
Expected<ObjectInfo> read_object(const void *data, std::size_t size, const std::string &name, bool branch_info) {
  auto table = linker_module::linker();
  if (!table)
    return table.take_error();
  return (*table)->read_object(data, size, name, branch_info);
}

// LLVM's demanglers are the module's; the name itself when it cannot load.
std::string demangle(const std::string &name) {
  auto table = linker_module::linker();
  return table ? (*table)->demangle(name) : name;
}

} // namespace exports

} // namespace hotlink
