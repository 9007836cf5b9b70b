// hotlink-ld: the out-of-process link worker. LinkService starts it with
// --worker and sends it planned jobs over stdin; it replies on stdout. A
// process of its own isolates the host from lld (crashes, fatal errors) and
// lets several links run at once.
#include "base/batch_memory.h"
#include "linker/worker.h"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "--worker") == 0) {
    // Job after job: each one's buffers are the next one's, already mapped.
    hotlink::base::allocate_as_a_batch_process();
    return hotlink::detail::worker_main();
  }
  std::fprintf(stderr,
               "hotlink-ld is hotlink's link worker; LinkService starts it as\n"
               "  hotlink-ld --worker\n"
               "and speaks to it over stdin/stdout. Use `hotlink link` to link.\n");
  return 2;
}
