#include "hotlink/verify_target.h"

#include "linker/platforms/platform.h"

namespace hotlink {

Expected<ArtifactDescription> describe_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name) {
  exports::Format format;
  exports::Arch arch;
  if (auto art = exports::read_artifact(bytes.data(), bytes.size(), name)) {
    format = art->format;
    arch = art->arch;
  } else if (auto obj = exports::read_object(bytes.data(), bytes.size(), name)) {
    format = obj->format;
    arch = obj->arch;
  } else {
    return obj.take_error();
  }
  auto t = detail::resolve_target(triple_for(format, arch));
  if (!t || !t->platform->describe)
    return ArtifactDescription{};
  return t->platform->describe(bytes, name);
}

Expected<ArtifactDescription> describe_device_code(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                                   const std::string &target) {
  auto t = detail::resolve_target(target);
  if (!t)
    return t.take_error();
  if (!t->platform->processor || !t->platform->describe)
    return make_error(ErrorCode::BadRequest, "'" + target + "' is not a GPU target: its inputs carry no device code", {},
                      "--target", "pass nvptx64-nvidia-cuda or amdgcn-amd-amdhsa");
  return t->platform->describe(bytes, name);
}

Expected<bool> loads_here(const std::string &target) {
  auto host = detail::resolve_target("");
  auto t = detail::resolve_target(target);
  if (!t)
    return t.take_error();
  return host && host->format == t->format && host->arch == t->arch;
}

Expected<hotlink::Verified> verify_for_target(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const std::string &target, hotlink::VerifyOptions options) {
  auto here = loads_here(target);
  if (!here)
    return here.take_error();
  if (*here)
    return hotlink::verify(bytes, name, options);
  auto t = detail::resolve_target(target);
  if (!options.processor.empty() && !t->platform->processor)
    return make_error(ErrorCode::BadRequest, "a processor is for GPU device targets, not " + t->triple, name,
                      "--mcpu", "drop --mcpu, or verify for --target amdgcn-amd-amdhsa");
  if (t->platform->carried_image) {
    auto image = t->platform->carried_image(bytes, name, options);
    if (!image)
      return image.take_error();
    if (*image)
      return verify_for_target(**image, name, target, options);
  }
  options.format = t->format;
  options.arch = t->arch;
  auto v = hotlink::verify(bytes, name, options);
  if (!v)
    return v;
  if (t->platform->check_artifact)
    if (auto err = t->platform->check_artifact(bytes, name, options))
      return std::move(*err);
  return v;
}

} // namespace hotlink
