// hotlink: the command-line face of the library. Every command is a thin
// layer over the public API (one file each, parsed with CLI11); --json
// prints the same result for scripts. Exit codes: cli.h.
#include "tools/cli.h"
#include "base/batch_memory.h"

// GCC's own @FILE expansion (expandargv), from libiberty; glibc declares
// basename() for C++ itself.
#define HAVE_DECL_BASENAME 1
#include <libiberty/libiberty.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kTopHelp = R"(hotlink: link JIT objects into shared objects in-process with lld.

usage: hotlink <command> [options]

commands:
  link      link objects into a .so / .dll / .dylib / wasm module
  exports   show what a link would export, or write the export file
  verify    check an artifact before it is loaded (and, with --load, load it)
  cache     show, check, prune or clear a cache directory (stats|verify|prune|clear)
  implib    make a Windows import library from a .def (link against a DLL without its SDK)
  keygen    make an Ed25519 key pair for signing artifacts and cache entries
  sign      sign an artifact (writes FILE.sig, which `verify --trusted-key` checks)
  targets   list the supported targets

Run `hotlink <command> --help` for a command's options; `hotlink --version`
prints hotlink's, lld's and LLVM's versions. An argument @FILE is replaced by
FILE's contents (a response file: GNU quoting, as lld and GCC read it).
exit codes: 0 success, 1 operation failed, 2 bad usage or bad input.
)";

struct CommandEntry {
  const char *name;
  int (*run)(int, char **);
};

const CommandEntry kCommands[] = {
    {"link", hotlink::cli::link},     {"exports", hotlink::cli::exports}, {"verify", hotlink::cli::verify},
    {"cache", hotlink::cli::cache},   {"implib", hotlink::cli::implib},   {"targets", hotlink::cli::targets},
    {"keygen", hotlink::cli::keygen}, {"sign", hotlink::cli::sign},
};

} // namespace

int main(int argc_in, char **argv_in) {
  hotlink::base::allocate_as_a_batch_process(); // one link, then an exit
  // @FILE arguments are replaced by FILE's contents, split and quoted as GCC
  // does (GNU rules: quotes, backslash escapes, nested @files; an @FILE
  // that cannot be read stays as it is, and then names a missing input).
  int argc = argc_in;
  char **argv = argv_in;
  expandargv(&argc, &argv);
  std::vector<std::string> words(argv, argv + argc);
  if (argv != argv_in)
    freeargv(argv); // expandargv's copy: the words are ours now
  std::vector<char *> args;
  for (std::string &w : words)
    args.push_back(w.data());

  if (args.size() < 2)
    return std::fputs(kTopHelp, stderr), hotlink::cli::kUsage;
  std::string cmd = args[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help")
    return std::fputs(kTopHelp, stdout), hotlink::cli::kOk;
  if (cmd == "--version" || cmd == "version")
    return hotlink::cli::print_version();
  for (const CommandEntry &c : kCommands)
    if (cmd == c.name)
      return c.run(static_cast<int>(args.size()) - 2, args.data() + 2);
  std::fprintf(stderr, "hotlink: unknown command '%s'\n\n%s", cmd.c_str(), kTopHelp);
  return hotlink::cli::kUsage;
}
