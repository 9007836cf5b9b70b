#include "rebuild/compile.h"

#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace hotlink::rebuild {

namespace {

std::string absolute(const std::string &path, const std::string &base = {}) {
  llvm::SmallString<256> p(path);
  if (!base.empty() && !llvm::sys::path::is_absolute(p)) {
    p = base;
    llvm::sys::path::append(p, path);
  }
  llvm::sys::fs::make_absolute(p);
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p);
}

// The database's command without its output and dependency flags.
std::vector<std::string> without_outputs(const std::vector<std::string> &line) {
  static const std::set<std::string> with_value = {"-o", "-MF", "-MT", "-MQ"};
  static const std::set<std::string> alone = {"-MD", "-MMD", "-MP", "-M", "-MM"};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const std::string &a = line[i];
    if (with_value.count(a)) {
      ++i;
      continue;
    }
    if (alone.count(a) || (a.rfind("-o", 0) == 0 && a.size() > 2 && i > 0) || a.rfind("-MF", 0) == 0)
      continue;
    out.push_back(a);
  }
  return out;
}

std::string read_text(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

// The compiler's first error line ("k.c:3:12: error: ..."), else its first line.
std::string first_error(const std::string &diagnostics) {
  std::size_t at = diagnostics.find(": error:");
  if (at == std::string::npos)
    at = diagnostics.find(": fatal error:");
  std::size_t start = at == std::string::npos ? 0 : diagnostics.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + (at == std::string::npos ? 0 : 1);
  std::size_t end = diagnostics.find('\n', start);
  std::string line = diagnostics.substr(start, end == std::string::npos ? std::string::npos : end - start);
  return line.empty() ? "the compiler failed and printed nothing" : line;
}

// Runs argv in `directory`, its output (both streams) into `log`. The exit
// status, or -1 with errno when it could not start.
int spawn(const std::vector<std::string> &argv, const std::string &directory, const std::string &log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  posix_spawn_file_actions_addchdir_np(&fa, directory.c_str());
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

Expected<std::vector<CompileCommand>> read_compile_commands(const std::string &database,
                                                            const std::vector<std::string> &sources,
                                                            const std::string &scratch) {
  if (sources.empty())
    return make_error(ErrorCode::BadRequest, "no sources to build", database, "sources",
                      "name the module's sources (Options::sources)");
  std::string why;
  auto db = clang::tooling::JSONCompilationDatabase::loadFromFile(database, why,
                                                                  clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!db)
    return make_error(ErrorCode::InputNotFound, "cannot read the compilation database: " + why, database, {},
                      "configure the build with CMAKE_EXPORT_COMPILE_COMMANDS=ON (or run it under Bear)");
  std::vector<CompileCommand> out;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string source = absolute(sources[i]);
    auto commands = db->getCompileCommands(source);
    if (commands.empty())
      return make_error(ErrorCode::BadRequest, "the compilation database has no command for it", source, {},
                        "add it to a target of the build and configure again (" + database + ")");
    const clang::tooling::CompileCommand &c = commands.front();
    CompileCommand cc;
    cc.source = source;
    cc.directory = c.Directory;
    std::string stem = scratch + "/" + std::to_string(i);
    cc.object = stem + ".o";
    cc.depfile = stem + ".d";
    cc.diagnostics = stem + ".log";
    cc.argv = without_outputs(c.CommandLine);
    for (const char *a : {"-MMD", "-MF"})
      cc.argv.push_back(a);
    cc.argv.push_back(cc.depfile);
    cc.argv.push_back("-o");
    cc.argv.push_back(cc.object);
    out.push_back(std::move(cc));
  }
  return out;
}

Expected<Compiled> run_compile(const CompileCommand &c) {
  ::unlink(c.object.c_str());
  int status = spawn(c.argv, c.directory, c.diagnostics);
  if (status < 0)
    return make_error(ErrorCode::CompileFailed, std::string("cannot run the compiler: ") + std::strerror(errno),
                      c.source, c.argv.front(), "the compilation database names a compiler this host does not have");
  if (status != 0)
    return make_error(ErrorCode::CompileFailed, "does not compile: " + first_error(read_text(c.diagnostics)),
                      c.source, {}, "fix it and save again; the running version keeps serving");
  auto obj = llvm::MemoryBuffer::getFile(c.object, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!obj)
    return make_error(ErrorCode::CompileFailed, "the compiler exited 0 but wrote no object", c.source, {},
                      "check the database's command for this source");
  Compiled out;
  out.object.assign((*obj)->getBufferStart(), (*obj)->getBufferEnd());
  for (const std::string &h : parse_depfile(read_text(c.depfile), c.directory))
    if (h != c.source)
      out.headers.push_back(h);
  return out;
}

std::string make_scratch_directory() {
  std::vector<std::string> bases = {"/dev/shm"};
  if (const char *t = std::getenv("TMPDIR"); t && *t)
    bases.push_back(t);
  bases.push_back("/tmp");
  for (const std::string &b : bases) {
    std::string templ = b + "/hotlink-rebuild-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      return buf.data();
  }
  return {};
}

std::uint64_t hash_file(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return 0;
  return llvm::xxh3_64bits(llvm::ArrayRef<std::uint8_t>(
      reinterpret_cast<const std::uint8_t *>((*buf)->getBufferStart()), (*buf)->getBufferSize()));
}

std::vector<std::string> read_events(int fd, const std::map<int, std::string> &dirs) {
  std::vector<std::string> out;
  alignas(struct inotify_event) char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    for (char *p = buf; p < buf + n;) {
      auto *ev = reinterpret_cast<struct inotify_event *>(p);
      auto dir = dirs.find(ev->wd);
      if (ev->len && dir != dirs.end())
        out.push_back(dir->second + "/" + ev->name);
      p += sizeof(struct inotify_event) + ev->len;
    }
  return out;
}

std::vector<std::string> parse_depfile(const std::string &text, const std::string &directory) {
  std::size_t colon = text.find(": ");
  if (colon == std::string::npos)
    colon = text.find(":\n");
  if (colon == std::string::npos)
    return {};
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty())
      out.push_back(absolute(word, directory));
    word.clear();
  };
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      flush();
      ++i;
    } else if (ch == '\\' && i + 1 < text.size() && text[i + 1] == ' ') {
      word += ' ';
      ++i;
    } else if (ch == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      word += '$';
      ++i;
    } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      flush();
      if (ch == '\n' && i + 1 < text.size() && text[i + 1] != ' ' && text[i + 1] != '\t')
        break; // the next rule (-MP's phony targets)
    } else {
      word += ch;
    }
  }
  flush();
  return out;
}

} // namespace hotlink::rebuild
