// Internal. The pieces of a rebuild that talk to the outside: the
// compilation database, the compiler process, depfiles and inotify.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hotlink::rebuild {

struct CompileCommand {
  std::string source;            // absolute
  std::string directory;         // where the compiler runs
  std::vector<std::string> argv; // the database's command, its output and dependency
                                 // flags replaced by ours (-o OBJECT -MMD -MF DEPFILE)
  std::string object, depfile, diagnostics; // in the scratch directory
};

// The command of each source, in order. Errors name the database or the
// source that it does not list.
Expected<std::vector<CompileCommand>> read_compile_commands(const std::string &database,
                                                            const std::vector<std::string> &sources,
                                                            const std::string &scratch);

struct Compiled {
  std::vector<std::uint8_t> object;
  std::vector<std::string> headers; // absolute paths the compiler read besides the source
};

// Runs the command; a failure is CompileFailed with the compiler's first
// "FILE:LINE:COL: error: ..." line.
Expected<Compiled> run_compile(const CompileCommand &command);

// A private directory for objects and depfiles (tmpfs when there is one).
std::string make_scratch_directory();

// xxh3 of the file's bytes; 0 when it cannot be read.
std::uint64_t hash_file(const std::string &path);

// Drains `inotify_fd`; the full paths its events named.
std::vector<std::string> read_events(int inotify_fd, const std::map<int, std::string> &dirs);

// "obj.o: a.c b.h \\\n c.h" -> {"DIR/a.c", "DIR/b.h", "DIR/c.h"} (Make's syntax).
std::vector<std::string> parse_depfile(const std::string &text, const std::string &directory);

} // namespace hotlink::rebuild
