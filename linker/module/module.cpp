// libhotlink-linker.so's entry point (plugin.h): the linker behind the
// table the runtime calls. Only hotlink_linker_module_v4 leaves the module.
#include "linker/module/plugin.h"
#include "hotlink/verify_target.h"
#include "exports/artifacts.h"

#include <exception>

namespace hotlink::linker_module {

namespace {

Error caught(const char *what) {
  return Error{ErrorCode::Internal, std::string("hotlink's linker module caught: ") + what, {}, {},
               "please report this; a bad_alloc means the process ran out of memory"};
}

// Runs `body`; an exception becomes an Internal error made by `fail`.
template <class R, class F, class Fail> R contained(F &&body, Fail &&fail) noexcept {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(caught(e.what()));
  } catch (...) {
    return fail(caught("an unknown exception"));
  }
}

LinkResult failed_result(Error e) {
  LinkResult r;
  r.error = std::move(e);
  return r;
}

template <class T> Expected<T> as_expected(Error e) { return Expected<T>(std::move(e)); }

LinkService *create_service(const ServiceConfig &config, Error *error) {
  return contained<LinkService *>([&] { return new LinkService(config); },
                                  [&](Error e) -> LinkService * {
                                    *error = std::move(e);
                                    return nullptr;
                                  });
}

void destroy_service(LinkService *service) { delete service; }

LinkResult link(LinkService &service, const LinkRequest &request) {
  return contained<LinkResult>([&] { return service.link(request); }, failed_result);
}

std::future<LinkResult> submit(LinkService &service, LinkRequest request) {
  return contained<std::future<LinkResult>>([&] { return service.submit(std::move(request)); }, [](Error e) {
    std::promise<LinkResult> p;
    p.set_value(failed_result(std::move(e)));
    return p.get_future();
  });
}

Expected<cache::Key> key_of(LinkService &service, const LinkRequest &request) {
  return contained<Expected<cache::Key>>([&] { return service.cache_key(request); }, as_expected<cache::Key>);
}

ServiceStats stats_of(const LinkService &service) { return service.stats(); }

bool usable() { return LinkService::in_process_usable(); }

std::optional<Error> llvm_options(const std::vector<std::string> &args) {
  return contained<std::optional<Error>>([&] { return hotlink::set_host_llvm_options(args); },
                                         [](Error e) { return std::optional<Error>(std::move(e)); });
}

Expected<cache::Artifact> artifact_of(const LinkResult &result) {
  return contained<Expected<cache::Artifact>>([&] { return hotlink::cache_artifact(result); },
                                              as_expected<cache::Artifact>);
}

Expected<Verified> verify_target(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                 const std::string &target, const VerifyOptions &options) {
  return contained<Expected<Verified>>([&] { return hotlink::verify_for_target(bytes, name, target, options); },
                                       as_expected<Verified>);
}

std::string lld() {
  return contained<std::string>([] { return hotlink::lld_version(); }, [](Error) { return std::string(); });
}

Expected<exports::ObjectInfo> object_of(const void *data, std::size_t size, const std::string &name,
                                        bool branch_info) {
  return contained<Expected<exports::ObjectInfo>>(
      [&] { return exports::read_object(data, size, name, branch_info); }, as_expected<exports::ObjectInfo>);
}

std::string demangled(const std::string &name) {
  return contained<std::string>([&] { return exports::demangle(name); }, [&](Error) { return name; });
}

Expected<ArtifactDescription> described(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  return contained<Expected<ArtifactDescription>>([&] { return hotlink::describe_artifact(bytes, name); },
                                                  as_expected<ArtifactDescription>);
}

Expected<ArtifactDescription> device_described(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                               const std::string &target) {
  return contained<Expected<ArtifactDescription>>([&] { return hotlink::describe_device_code(bytes, name, target); },
                                                  as_expected<ArtifactDescription>);
}

Expected<bool> loads(const std::string &target) {
  return contained<Expected<bool>>([&] { return hotlink::loads_here(target); }, as_expected<bool>);
}

std::vector<std::string> targets() {
  return contained<std::vector<std::string>>([] { return hotlink::supported_targets(); },
                                             [](Error) { return std::vector<std::string>(); });
}

std::string triple_of(exports::Format format, exports::Arch arch) {
  return contained<std::string>([&] { return hotlink::triple_for(format, arch); }, [](Error) { return std::string(); });
}

Expected<TargetFormat> format_of(const std::string &triple) {
  return contained<Expected<TargetFormat>>([&] { return hotlink::target_format(triple); },
                                           as_expected<TargetFormat>);
}

Expected<ImportLibrary> implib(const std::string &def_text, const std::string &def_name, const std::string &machine,
                               const std::string &dll_name, bool mingw) {
  return contained<Expected<ImportLibrary>>(
      [&] { return hotlink::import_library_from_def(def_text, def_name, machine, dll_name, mingw); },
      as_expected<ImportLibrary>);
}

Expected<exports::ArtifactInfo> artifact_read(const void *data, std::size_t size, const std::string &name) {
  return contained<Expected<exports::ArtifactInfo>>(
      [&] { return exports::read_artifact_with_llvm(data, size, name); }, as_expected<exports::ArtifactInfo>);
}

} // namespace

} // namespace hotlink::linker_module

extern "C" __attribute__((visibility("default"))) const hotlink::linker_module::Table *hotlink_linker_module_v4() {
  using namespace hotlink::linker_module;
  static const Table table{stamp(HOTLINK_VERSION_STRING), create_service, destroy_service, link, submit, key_of,
                           stats_of, usable, llvm_options, artifact_of, verify_target, lld,
                           object_of, targets, triple_of, demangled, described, device_described, loads, format_of,
                           implib, artifact_read};
  return &table;
}
