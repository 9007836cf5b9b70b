// hotlink implib: the import library of a DLL that a .def describes.
#include "tools/cli.h"

#include "hotlink/verify.h"

#include <cstdio>

namespace hotlink::cli {

int implib(int argc, char **argv) {
  Command cmd("implib", "hotlink implib --def FILE.def --machine x64|x86|arm64 -o OUT.lib [options]",
              "Writes the import library of the DLL that FILE.def describes, as `llvm-lib /def:` does, so\n"
              "that objects can be linked against the DLL without its SDK (hotlink link -l OUT.lib ...).",
              "exit codes: 0 written, 2 bad usage or a bad .def (the error names the line).");
  std::string def, machine, out, dll;
  bool json = false, mingw = false;
  CLI::App &app = cmd.app;
  app.add_option("--def", def, "the .def to read (required)")->type_name("FILE.def");
  app.add_option("--machine", machine, "x64, x86 or arm64 (required: a .def names no machine)")->type_name("M");
  app.add_option("-o,--output", out, "the import library to write (required)")->type_name("OUT.lib");
  app.add_option("--dll", dll, "the DLL's file name (default: the .def's LIBRARY line)")->type_name("NAME");
  app.add_flag("--mingw", mingw,
               "read the .def as llvm-dlltool does (mingw-w64 .def files: on i386, ExitProcess@4 means "
               "_ExitProcess@4)");
  app.add_flag("--json", json, "print the result as JSON on stdout");
  if (int rc = cmd.parse(argc, argv); rc >= 0)
    return rc;
  if (def.empty() || machine.empty() || out.empty())
    return usage_error("--def, --machine and -o are required", "implib");
  auto fail = [&](const hotlink::Error &e) { return print_error(e, json); };
  auto text = read_artifact_file(def);
  if (!text)
    return fail(hotlink::make_error(hotlink::ErrorCode::InputNotFound, text.error().message, def, "--def",
                                    "check the path"));
  auto lib = hotlink::import_library_from_def(std::string(text->begin(), text->end()), def, machine, dll, mingw);
  if (!lib)
    return fail(lib.error());
  if (auto err = write_output_file(out, lib->bytes))
    return fail(*err);
  if (json) {
    print_json(Json{{"ok", true}, {"implib", out}, {"dll", lib->dll_name}, {"exports", lib->exports}});
  } else {
    std::printf("wrote %s: %zu imports from %s\n", out.c_str(), lib->exports.size(),
                lib->dll_name.c_str());
  }
  return kOk;
}

} // namespace hotlink::cli
