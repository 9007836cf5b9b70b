// Reading a user's ELF version script, to merge it with an export policy.
//
// Contract: parse_version_script() reads the GNU ld version-script syntax
// that lld accepts (named and anonymous nodes, `global:`/`local:`, glob
// patterns, quoted literal names, `extern "C++" { ... }` blocks, parent
// versions, `#` and `/* */` comments) and returns each node's patterns;
// anything else is an error naming the input and the line. lld's own
// parser is not part of its public API, so hotlink reads the script for
// one purpose only: to know which names the user's nodes claim. The
// script itself still goes to lld verbatim, which parses it again.
#pragma once

#include "hotlink/error.h"

#include <string>
#include <vector>

namespace hotlink::exports {

struct VersionPattern {
  std::string text;
  bool cxx = false;     // inside extern "C++": matched against demangled names
  bool literal = false; // quoted: no glob characters
};

struct VersionNode {
  std::string name; // empty: the anonymous node
  std::vector<VersionPattern> global, local;
  std::string parent;
};

Expected<std::vector<VersionNode>> parse_version_script(const std::string &text,
                                                        const std::string &input);

// The node whose global patterns claim `symbol` (exact names first, then
// globs, as lld assigns), or null. `demangled` is its C++ demangling.
const VersionNode *claiming_node(const std::vector<VersionNode> &nodes,
                                 const std::string &symbol, const std::string &demangled);

// Whether a local pattern names `symbol` exactly (not through a glob).
bool names_local(const std::vector<VersionNode> &nodes, const std::string &symbol);

} // namespace hotlink::exports
