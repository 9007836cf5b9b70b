#include "hotlink/load.h"
#include "loader/halide_abi.h"
#include "loader/platform.h"

#include <atomic>
#include <string>

namespace hotlink::loader {

std::pair<std::string, std::string> split_extension(const std::string &file) {
  std::size_t so = file.find(".so");
  if (so != std::string::npos && so > 0)
    return {file.substr(0, so), file.substr(so)};
  std::size_t dot = file.rfind('.');
  if (dot == std::string::npos || dot == 0)
    return {file, ".so"};
  return {file.substr(0, dot), file.substr(dot)};
}

std::string copy_file_name(const std::string &name, std::uint64_t version, const std::string &hash) {
  static std::atomic<std::uint64_t> count{0};
  auto [stem, ext] = split_extension(name.substr(name.rfind('/') + 1));
  std::string number = version ? "v" + std::to_string(version) : std::to_string(++count);
  return stem + "." + number + "." + hash.substr(0, 8) + ext;
}

Expected<VerifiedLibrary> load_verified(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                        const VerifyOptions &verify_options, const LoadOptions &load_options) {
  auto verified = verify(bytes, name, verify_options);
  if (!verified)
    return verified.take_error();
  LoadOptions load = load_options;
  if (load.file_name.empty())
    load.file_name = copy_file_name(name, load.version,
                                    verified->sha256.empty() ? verified->blake3 : verified->sha256);
  auto lib = load_private(bytes, name, load);
  if (!lib)
    return lib.take_error();
  return VerifiedLibrary{std::move(lib.value()), std::move(verified.value())};
}

std::optional<Error> check_abi(const Library &lib, const std::string &metadata_symbol,
                               const ExpectedAbi &expected) {
  auto fn = reinterpret_cast<const hotlink::loader::halide_abi::halide_filter_metadata_t *(*)()>(lib.symbol(metadata_symbol));
  auto bad = [&](std::string what, std::string symbol = {}) {
    return make_error(ErrorCode::AbiMismatch, std::move(what), lib.name(),
                      symbol.empty() ? metadata_symbol : symbol,
                      "rebuild the host and the pipeline from the same generator version");
  };
  if (!fn)
    return bad("the artifact has no " + metadata_symbol + "()");
  const hotlink::loader::halide_abi::halide_filter_metadata_t *m = fn();
  if (!m)
    return bad(metadata_symbol + "() returned null");
  if (m->version != expected.version)
    return bad("metadata version is " + std::to_string(m->version) + ", the host expects " +
               std::to_string(expected.version));
  if (m->num_arguments != static_cast<int>(expected.arguments.size()))
    return bad("the pipeline takes " + std::to_string(m->num_arguments) + " arguments, the host passes " +
               std::to_string(expected.arguments.size()));
  if (m->num_arguments > 0 && !m->arguments)
    return bad("metadata lists arguments but no argument table");
  for (int i = 0; i < m->num_arguments; ++i) {
    const hotlink::loader::halide_abi::halide_filter_argument_t &a = m->arguments[i];
    const AbiArgument &w = expected.arguments[i];
    std::string name = a.name ? a.name : "";
    std::string where = "argument " + std::to_string(i) + " ('" + name + "')";
    if (name != w.name)
      return bad(where + " should be named '" + w.name + "'", name);
    if (a.kind != w.kind)
      return bad(where + " has kind " + std::to_string(a.kind) + ", expected " + std::to_string(w.kind), name);
    if (a.dimensions != w.dimensions)
      return bad(where + " has " + std::to_string(a.dimensions) + " dimensions, expected " +
                     std::to_string(w.dimensions), name);
    if (a.type.code != w.type_code || a.type.bits != w.type_bits)
      return bad(where + " has type code " + std::to_string(a.type.code) + "/" + std::to_string(a.type.bits) +
                     " bits, expected " + std::to_string(w.type_code) + "/" + std::to_string(w.type_bits),
                 name);
  }
  return std::nullopt;
}

} // namespace hotlink::loader
