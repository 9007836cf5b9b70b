// Malloc settings for hotlink's own processes, the CLI and the hotlink-ld
// worker; never for a host's (a library does not change its host's
// allocator).
#pragma once

namespace hotlink::base {

// A process that links, frees, and links again wants the memory it freed
// again at once: malloc keeps it (no trim, no mmap of its own per large
// block), and its heap is asked for transparent huge pages (the kernel's
// default policy is madvise). Page faults are most of a large link's system
// time: 100,000 exported functions took 26,500 faults in the CLI, 8,000 so;
// a worker's job and reply buffers of a ~150 KB link were fresh pages at
// every link. The process keeps up to 512 MB it freed for its next link.
void allocate_as_a_batch_process();

} // namespace hotlink::base
