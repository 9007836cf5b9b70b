// Internal. Glob patterns over symbol names (the export policies'
// --include and --exclude), as lld reads them in version scripts: LLVM's
// GlobPattern without brace expansion, written here so that the runtime,
// which offers export policies in its public API, links no LLVM.
//
// Contract (LLVM's GlobPattern, which test/fuzz/fuzz_glob.cpp compares it
// with on every input):
// - `?` matches one byte, `*` any run of bytes (separators included);
// - `[...]` one byte of a set: ranges `a-z`, negation by a first `^` or
//   `!`, a `]` first in the set is literal, `[]` is invalid; inside a set
//   `\` is an ordinary byte;
// - `\` makes the next byte literal; a `\` at the end is invalid;
// - every other byte (`{`, `,`, `}` included) matches itself.
#pragma once

#include "hotlink/error.h"

#include <bitset>
#include <string>
#include <string_view>
#include <vector>

namespace hotlink::base {

class Glob {
public:
  // The compiled pattern, or an error that says what is wrong with it
  // (the caller names the flag that gave it).
  static Expected<Glob> compile(std::string_view pattern);

  bool match(std::string_view s) const;

private:
  struct Token {
    enum Kind { Byte, AnyByte, Star, Set } kind;
    unsigned char byte = 0;
    std::size_t set = 0; // index in sets_
  };
  std::vector<Token> tokens_;
  std::vector<std::bitset<256>> sets_;
};

} // namespace hotlink::base
