// Links the object named on the command line with an installed hotlink and
// prints the number of bytes of the shared object.
#include <linker/linker.h>
#include <linker/service.h>

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
  return 0;
}
