// Links the object named on the command line with an installed hotlink and
// prints the number of bytes of the shared object; then makes a Rebuilder
// (hotlink::rebuild) that reports a missing compilation database.
#include <linker/linker.h>
#include <linker/service.h>
#include <rebuild/rebuilder.h>
#include <hotlink/state.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs.push_back(hotlink::Input::file(argv[1]));
  req.exports = hotlink::ExportPolicy::list({"f"});
  hotlink::LinkResult r = service.link(req);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.error->to_string().c_str());
    return 1;
  }
  std::printf("linked %zu bytes exporting %s\n", r.artifact.size(), r.exports[0].c_str());
  // hotlink::rebuild links too: a database that does not exist is its error.
  hotlink::loader::HotModule module;
  hotlink::rebuild::Options o;
  o.compile_commands = "/nonexistent/compile_commands.json";
  o.sources = {"k.c"};
  hotlink::rebuild::Rebuilder rb(module, service, o);
  if (!rb.last_error() || rb.last_error()->code != hotlink::ErrorCode::InputNotFound)
    return 1;
  return 0;
}
