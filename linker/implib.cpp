#include "hotlink/link.h"

#include "exports/writers.h"

#include "llvm/Object/COFFImportFile.h"
#include "llvm/Object/COFFModuleDefinition.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <unistd.h>

namespace hotlink {

namespace {

bool machine_of(const std::string &m, llvm::COFF::MachineTypes &out) {
  if (m == "x64" || m == "amd64" || m == "x86_64")
    out = llvm::COFF::IMAGE_FILE_MACHINE_AMD64;
  else if (m == "x86" || m == "i386" || m == "i686")
    out = llvm::COFF::IMAGE_FILE_MACHINE_I386;
  else if (m == "arm64" || m == "aarch64")
    out = llvm::COFF::IMAGE_FILE_MACHINE_ARM64;
  else
    return false;
  return true;
}

llvm::Expected<llvm::object::COFFModuleDefinition> parse(const std::string &text,
                                                         llvm::COFF::MachineTypes machine,
                                                         bool mingw) {
  return llvm::object::parseCOFFModuleDefinition(llvm::MemoryBufferRef(text, "def"), machine,
                                                 /*MingwDef=*/mingw);
}

} // namespace

Expected<ImportLibrary> import_library_from_def(const std::string &def_text,
                                                const std::string &def_name,
                                                const std::string &machine,
                                                const std::string &dll_name, bool mingw) {
  llvm::COFF::MachineTypes m;
  if (!machine_of(machine, m))
    return make_error(ErrorCode::BadRequest, "unknown machine '" + machine + "'", def_name,
                      "--machine", "use x64, x86 or arm64");
  auto def = parse(def_text, m, mingw);
  if (!def) {
    std::string why = llvm::toString(def.takeError());
    exports::Arch arch = m == llvm::COFF::IMAGE_FILE_MACHINE_I386    ? exports::Arch::X86
                         : m == llvm::COFF::IMAGE_FILE_MACHINE_ARM64 ? exports::Arch::AArch64
                                                                     : exports::Arch::X86_64;
    std::size_t line = exports::def_error_line(def_text, arch);
    return make_error(ErrorCode::InvalidInput,
                      "line " + std::to_string(line) + ": " + why, def_name, {},
                      "fix the module-definition syntax (LIBRARY name, then EXPORTS with one "
                      "name per line: name[=internal] [@ordinal] [NONAME] [DATA] [PRIVATE])");
  }
  ImportLibrary out;
  out.dll_name = dll_name.empty() ? def->OutputFile : dll_name;
  if (out.dll_name.empty())
    return make_error(ErrorCode::BadRequest, "the .def has no LIBRARY name", def_name, "--dll",
                      "add a LIBRARY line or pass the DLL's name (--dll NAME.dll)");
  if (def->Exports.empty())
    return make_error(ErrorCode::InvalidInput, "the .def exports nothing", def_name, {},
                      "list the DLL's exports under EXPORTS");
  for (const llvm::object::COFFShortExport &e : def->Exports)
    out.exports.push_back(e.Name);

  // The writer wants a path: a private temporary, read back and removed.
  llvm::SmallString<128> temp;
  int fd = -1;
  if (auto ec = llvm::sys::fs::createTemporaryFile("hotlink-implib", "lib", fd, temp))
    return make_error(ErrorCode::OutputError, "cannot create a temporary file: " + ec.message(),
                      def_name);
  ::close(fd);
  llvm::Error err = llvm::object::writeImportLibrary(out.dll_name, temp, def->Exports, m,
                                                     /*MinGW=*/mingw);
  if (err) {
    llvm::sys::fs::remove(temp);
    return make_error(ErrorCode::OutputError,
                      "cannot write the import library: " + llvm::toString(std::move(err)),
                      def_name);
  }
  auto buf = llvm::MemoryBuffer::getFile(temp, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  llvm::sys::fs::remove(temp);
  if (!buf)
    return make_error(ErrorCode::OutputError,
                      "cannot read the import library back: " + buf.getError().message(),
                      def_name);
  const auto *p = reinterpret_cast<const std::uint8_t *>((*buf)->getBufferStart());
  out.bytes.assign(p, p + (*buf)->getBufferSize());
  return out;
}

} // namespace hotlink
