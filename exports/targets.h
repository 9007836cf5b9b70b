// Internal. LLVM's target registry is a list that registering a target
// changes, with nothing to guard it: lld registers every target at the
// start of each call (InitializeAllTargets), and a lookup on another thread
// at that moment can follow a half-made list (seen: a warm-up's assembler
// spinning forever in TargetRegistry::lookupTarget). hotlink registers them
// once, before anything of its own looks a target up or lld first runs;
// after that lld's registrations change nothing.
#pragma once

namespace hotlink::exports {

// Registers every target LLVM was built with; cheap after the first call.
void initialize_llvm_targets();

} // namespace hotlink::exports
