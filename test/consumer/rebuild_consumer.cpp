// hotlink::rebuild from an installed hotlink: a Rebuilder reports a
// compilation database that does not exist as its error.
#include <hotlink/rebuild.h>

int main() {
  hotlink::LinkService service;
  hotlink::loader::HotModule module;
  hotlink::rebuild::Options o;
  o.compile_commands = "/nonexistent/compile_commands.json";
  o.sources = {"k.c"};
  hotlink::rebuild::Rebuilder rb(module, service, o);
  return rb.last_error() && rb.last_error()->code == hotlink::ErrorCode::InputNotFound ? 0 : 1;
}
