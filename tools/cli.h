// What every `hotlink` command shares: exit codes, error printing, the
// CLI11 glue that parses a command's arguments, and the export-policy
// options of `link` and `exports`. One command per file (link.cpp,
// exports.cpp, verify.cpp, cache.cpp, implib.cpp, keys.cpp); main.cpp
// dispatches.
//
// Exit codes: 0 success; 1 the operation failed (the link failed, an
// artifact was refused); 2 bad usage or bad input (unknown flag, missing or
// invalid input, unwritable output).
#pragma once

#include "hotlink/error.h"
#include "hotlink/export_policy.h"
#include "hotlink/symbols.h"
#include "hotlink/link.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::cli {

// --json's values (nlohmann/json: objects print with their keys sorted).
using Json = nlohmann::json;

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

// The commands; argv holds the command's own arguments (after its name).
int link(int argc, char **argv);
int exports(int argc, char **argv);
int verify(int argc, char **argv);
int cache(int argc, char **argv);
int implib(int argc, char **argv);
int keygen(int argc, char **argv);
int sign(int argc, char **argv);
int targets(int argc, char **argv);
int print_version();

// A command's parser: CLI11 with hotlink's help layout ("usage: hotlink
// CMD ..." and the description first, exit codes in the footer).
struct Command {
  Command(const std::string &name, const std::string &usage, const std::string &description,
          const std::string &footer);
  // Parses; returns -1 to go on, or the exit code to return now (0 after
  // --help, 2 with the usage error printed).
  int parse(int argc, char **argv);
  CLI::App app;
  std::string name;
};

// Prints "hotlink: MSG" and where to find the command's usage; returns 2.
int usage_error(const std::string &msg, const std::string &cmd);
// The exit code an error of this kind maps to.
int exit_code_for(ErrorCode c);
const char *severity_name(Severity s);
Json error_json(const Error &e);
// An error as --json or as text; returns the exit code its kind maps to.
int print_error(const Error &e, bool json);
// Prints `v` on stdout, indented by two (bytes that are not UTF-8 print
// as U+FFFD: a path or a symbol name may hold any byte).
void print_json(const Json &v);

// printf into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// "1048576", "64K", "512M", "2G".
bool parse_size(const std::string &s, std::uint64_t &out);
std::optional<std::string> read_text_file(const std::string &path);

// --policy, --export, --include, --exclude, shared by `link` and `exports`.
struct PolicyOptions {
  std::string mode = "entry-points";
  std::vector<std::string> names, include, exclude;
  void add_to(CLI::App &app);
  // Fills `policy`; returns a usage message for a bad --policy.
  std::optional<std::string> apply(exports::ExportPolicy &policy) const;
};

} // namespace hotlink::cli
