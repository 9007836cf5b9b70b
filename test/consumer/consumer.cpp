// The README's C++ example, built against an installed hotlink alone
// (find_package(hotlink), hotlink::hotlink): links the object named on the
// command line for this host, reloads a HotModule with the bytes and calls
// f(20); then reads the object and names the targets through the
// linker's free functions, which libhotlink.so forwards to the linker
// module. Built and run by the install test (test/install_test.sh).
#include <hotlink/export_policy.h>
#include <hotlink/hot_module.h>
#include <hotlink/link_service.h>

#include <fstream>
#include <iterator>
#include <vector>

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

  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> object((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto info = hotlink::exports::read_object(object.data(), object.size(), argv[1]);
  if (!info)
    return std::fprintf(stderr, "%s\n", info.error().to_string().c_str()), 1;
  auto chosen = hotlink::exports::select_exports({*info}, info->format, info->arch, hotlink::ExportPolicy::all());
  if (!chosen || chosen->empty())
    return std::fprintf(stderr, "select_exports chose nothing\n"), 1;
  std::printf("read_object: %s exports %s; %zu targets; demangle(_Z1fi) = %s\n",
              hotlink::triple_for(info->format, info->arch).c_str(), (*chosen)[0].name.c_str(),
              hotlink::supported_targets().size(), hotlink::exports::demangle("_Z1fi").c_str());
  return 0;
}
