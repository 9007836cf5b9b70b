#include "base/batch_memory.h"

#include <cstdint>
#include <cstdlib>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

namespace hotlink::base {

void allocate_as_a_batch_process() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  constexpr std::uintptr_t kHuge = 2u << 20;
  auto from = (reinterpret_cast<std::uintptr_t>(::sbrk(0)) + kHuge - 1) & ~(kHuge - 1);
  void *volatile grow = std::malloc(16u << 20); // the heap grows by this and the pad, which stay
  std::free(grow);
  auto to = reinterpret_cast<std::uintptr_t>(::sbrk(0)) & ~(kHuge - 1);
  if (to > from) // later growth extends the same mapping, and its advice
    (void)::madvise(reinterpret_cast<void *>(from), to - from, MADV_HUGEPAGE);
}

} // namespace hotlink::base
