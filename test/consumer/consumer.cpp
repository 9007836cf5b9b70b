// The README's C++ example, built against an installed hotlink alone
// (find_package(hotlink), hotlink::hotlink): links the object named on the
// command line for this host, reloads a HotModule with the bytes and calls
// f(20). Built and run by the install test (test/install_test.sh).
#include <hotlink/hot_module.h>
#include <hotlink/link_service.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs.push_back(hotlink::Input::file(argv[1]));
  req.exports = hotlink::ExportPolicy::list({"f"});
  hotlink::LinkResult r = service.link(req);
  if (!r.ok())
    return std::fprintf(stderr, "%s\n", r.error->to_string().c_str()), 1;
  hotlink::loader::HotModule module;
  auto f = module.entry<int(int)>("f").value();
  if (auto err = module.reload(r.artifact, "k.so"))
    return std::fprintf(stderr, "%s\n", err->to_string().c_str()), 1;
  std::printf("linked %zu bytes exporting %s; f(20) = %d\n", r.artifact.size(), r.exports[0].c_str(), f(20));
  return 0;
}
