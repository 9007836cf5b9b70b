// Internal. lld's ELF port allocates input sections, symbols and
// relocation arrays from arenas that are thread_local (lld::makeThreadLocal,
// lld/Common/Memory.h) and that survive each lldMain call: CommonLinkerContext
// frees the arenas it owns, not these, which are freed only when the thread
// ends. A thread that links forever would grow by what each link put there
// (~7 KiB a small link with its runtime environment, about a fifth of a
// large input). release_lld_thread_arenas() frees the calling thread's, as
// the thread's end would: each arena's objects are destroyed and its slabs
// returned to malloc. So lld can run on any thread, the host's included,
// and a process can link forever in bounded memory.
//
// Call it only on the thread that ran lld, after lldMain returned, with
// lld's lock held, and only when lld can run again (after a fatal error
// its objects may be inconsistent: they are left alone).
//
// The arenas are named by their symbols in lld 22 (one per type lld's ELF
// port allocates thread-locally): a newer lld that adds a type is caught by
// the memory benchmark (bench/direct_bench: RSS after 100,000 links), one
// that drops a type by the link of this file.
#pragma once

namespace hotlink::detail {

void release_lld_thread_arenas();

} // namespace hotlink::detail
