#include "hotlink/load.h"
#include "loader/halide_abi.h"
#include "loader/platform.h"

#include <cctype>
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
  auto [stem, ext] = split_extension(name.substr(name.rfind('/') + 1));
  return stem + "." + (version ? "v" + std::to_string(version) + "." : std::string()) + hash.substr(0, 8) + ext;
}

std::string clean_file_name(const std::string &s) {
  std::string out;
  for (char c : s.substr(0, 96))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+') ? c : '_';
  return out.empty() ? "artifact" : out;
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
  auto lib = load_copy(bytes, name, load, &verified->info.build_id,
                       verified->blake3.empty() ? nullptr : &verified->blake3);
  if (!lib)
    return lib.take_error();
  return VerifiedLibrary{std::move(lib.value()), std::move(verified.value())};
}

namespace {

Error abi_error(const Library &lib, const std::string &metadata_symbol, std::string what,
                const std::string &symbol = {}) {
  return make_error(ErrorCode::AbiMismatch, std::move(what), lib.name(), symbol.empty() ? metadata_symbol : symbol,
                    "rebuild the host and the pipeline from the same generator version");
}

} // namespace

Expected<PipelineMetadata> read_pipeline_metadata(const Library &lib, const std::string &metadata_symbol) {
  using Report = const halide_abi::halide_filter_metadata_t *(*)();
  auto fn = reinterpret_cast<Report>(lib.symbol(metadata_symbol));
  if (!fn)
    return abi_error(lib, metadata_symbol, "the artifact has no " + metadata_symbol + "()");
  const halide_abi::halide_filter_metadata_t *m = fn();
  if (!m)
    return abi_error(lib, metadata_symbol, metadata_symbol + "() returned null");
  if (m->num_arguments < 0)
    return abi_error(lib, metadata_symbol, "metadata reports " + std::to_string(m->num_arguments) + " arguments");
  if (m->num_arguments > 0 && !m->arguments)
    return abi_error(lib, metadata_symbol, "metadata lists arguments but no argument table");
  PipelineMetadata out;
  out.version = m->version;
  out.name = m->name ? m->name : "";
  for (int i = 0; i < m->num_arguments; ++i) {
    const halide_abi::halide_filter_argument_t &a = m->arguments[i];
    out.arguments.push_back({a.name ? a.name : "", a.kind, a.dimensions, a.type.code, a.type.bits});
  }
  return out;
}

std::optional<Error> check_abi(const Library &lib, const std::string &metadata_symbol,
                               const ExpectedAbi &expected) {
  auto m = read_pipeline_metadata(lib, metadata_symbol);
  if (!m)
    return m.take_error();
  auto bad = [&](std::string what, const std::string &symbol = {}) {
    return abi_error(lib, metadata_symbol, std::move(what), symbol);
  };
  if (m->version != expected.version)
    return bad("metadata version is " + std::to_string(m->version) + ", the host expects " +
               std::to_string(expected.version));
  if (m->arguments.size() != expected.arguments.size())
    return bad("the pipeline takes " + std::to_string(m->arguments.size()) + " arguments, the host passes " +
               std::to_string(expected.arguments.size()));
  for (std::size_t i = 0; i < m->arguments.size(); ++i) {
    const AbiArgument &a = m->arguments[i], &w = expected.arguments[i];
    std::string where = "argument " + std::to_string(i) + " ('" + a.name + "')";
    if (a.name != w.name)
      return bad(where + " should be named '" + w.name + "'", a.name);
    if (a.kind != w.kind)
      return bad(where + " has kind " + std::to_string(a.kind) + ", expected " + std::to_string(w.kind), a.name);
    if (a.dimensions != w.dimensions)
      return bad(where + " has " + std::to_string(a.dimensions) + " dimensions, expected " +
                     std::to_string(w.dimensions), a.name);
    if (a.type_code != w.type_code || a.type_bits != w.type_bits)
      return bad(where + " has type code " + std::to_string(a.type_code) + "/" + std::to_string(a.type_bits) +
                     " bits, expected " + std::to_string(w.type_code) + "/" + std::to_string(w.type_bits),
                 a.name);
  }
  return std::nullopt;
}

} // namespace hotlink::loader
