// The helpers every hotlink command shares (cli.h).
#include "tools/cli.h"

#include "hotlink/link_service.h"
#include "hotlink/verify.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace hotlink::cli {

namespace {

// hotlink's help layout over CLI11's: the usage line and the description
// before the options, as the hand-written help had it.
class Formatter : public CLI::Formatter {
public:
  explicit Formatter(std::string usage) : usage_(std::move(usage)) { column_width(kColumn); }
  std::string make_description(const CLI::App *app) const override {
    std::string d = app->get_description();
    return "usage: " + usage_ + "\n" + (d.empty() ? "" : "\n" + d + "\n");
  }
  std::string make_usage(const CLI::App *, std::string) const override { return ""; }
  // Descriptions wrapped to fit 80 columns beside the option names.
  std::string make_option_desc(const CLI::Option *opt) const override {
    return wrap(opt->get_description(), 78 - kColumn);
  }

private:
  static constexpr std::size_t kColumn = 24;
  static std::string wrap(const std::string &text, std::size_t width) {
    std::string out, line, word;
    std::istringstream words(text);
    while (words >> word) {
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        out += line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
    }
    return out + line;
  }
  std::string usage_;
};

} // namespace

Command::Command(const std::string &cmd, const std::string &usage, const std::string &description,
                 const std::string &footer)
    : app(description, "hotlink " + cmd), name(cmd) {
  app.formatter(std::make_shared<Formatter>(usage));
  app.set_help_flag("-h,--help", "this help");
  app.footer(footer);
  app.option_defaults()->always_capture_default(false);
}

int Command::parse(int argc, char **argv) {
  std::vector<const char *> args{"hotlink"};
  for (int i = 0; i < argc; ++i)
    args.push_back(argv[i]);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp &) {
    std::cout << app.help();
    return kOk;
  } catch (const CLI::ParseError &e) {
    return usage_error(e.what(), name);
  }
  return -1;
}

int usage_error(const std::string &msg, const std::string &cmd) {
  std::fprintf(stderr, "hotlink: %s\nRun `hotlink %s --help` for usage.\n", msg.c_str(), cmd.c_str());
  return kUsage;
}

int exit_code_for(ErrorCode c) {
  switch (c) {
  case ErrorCode::BadRequest: case ErrorCode::InputNotFound:
  case ErrorCode::InvalidInput: case ErrorCode::FormatMismatch:
  case ErrorCode::ArchMismatch: case ErrorCode::MixedFormats:
  case ErrorCode::BadSymbolName: case ErrorCode::MissingExport:
  case ErrorCode::OutputError: case ErrorCode::CacheUnsafe: case ErrorCode::KeyError:
    return kUsage;
  default:
    return kFailed;
  }
}

const char *severity_name(Severity s) {
  switch (s) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "note";
}

Json error_json(const Error &e) {
  return Json{{"code", to_string(e.code)}, {"message", e.message}, {"input", e.input},
              {"symbol", e.symbol}, {"hint", e.hint}};
}

void print_json(const Json &v) {
  std::string text = v.dump(2, ' ', false, Json::error_handler_t::replace);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int print_error(const Error &e, bool json) {
  if (json)
    print_json(Json{{"ok", false}, {"error", error_json(e)}});
  else
    std::fprintf(stderr, "hotlink: %s\n", e.to_string().c_str());
  return exit_code_for(e.code);
}

std::string format(const char *fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(n > 0 ? std::size_t(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(&out[0], out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

bool parse_size(const std::string &s, std::uint64_t &out) {
  if (s.empty())
    return false;
  std::uint64_t mult = 1;
  std::string digits = s;
  switch (s.back()) {
  case 'K': case 'k': mult = 1ull << 10; digits.pop_back(); break;
  case 'M': case 'm': mult = 1ull << 20; digits.pop_back(); break;
  case 'G': case 'g': mult = 1ull << 30; digits.pop_back(); break;
  default: break;
  }
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(digits) * mult;
  return true;
}

std::optional<std::string> read_text_file(const std::string &path) {
  auto bytes = read_artifact_file(path);
  if (!bytes)
    return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

void PolicyOptions::add_to(CLI::App &app) {
  const char *group = "Exports";
  app.add_option("--policy", mode, "entry-points (default), all, list or none")->type_name("P")->group(group);
  app.add_option("--export", names, "export NAME (repeatable), in any policy")
      ->allow_extra_args(false)->type_name("NAME")->group(group);
  app.add_option("--include", include, "also export defined symbols matching GLOB (repeatable)")
      ->allow_extra_args(false)->type_name("GLOB")->group(group);
  app.add_option("--exclude", exclude, "never export symbols matching GLOB (repeatable)")
      ->allow_extra_args(false)->type_name("GLOB")->group(group);
}

std::optional<std::string> PolicyOptions::apply(exports::ExportPolicy &policy) const {
  if (!exports::parse_mode(mode, policy.mode))
    return "--policy takes entry-points, all, list or none, not '" + mode + "'";
  policy.names = names;
  policy.include = include;
  policy.exclude = exclude;
  return std::nullopt;
}

int print_version() {
  std::printf("hotlink %s\n  lld:  %s\n  LLVM: %s\n  host: %s\n", version().c_str(), lld_version().c_str(),
              llvm_version().c_str(), host_target().c_str());
  return kOk;
}

int targets(int argc, char **argv) {
  Command cmd("targets", "hotlink targets", "Lists the target triples hotlink links for, and the host's.",
              "exit codes: 0.");
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  for (const std::string &t : supported_targets())
    std::printf("%s\n", t.c_str());
  std::printf("host: %s\n", host_target().c_str());
  return kOk;
}

} // namespace hotlink::cli
