// lld's version line: what lld answers itself (the linker's half of the
// versions; linker/request.cpp has the rest).
#include "hotlink/link.h"

// lld/Common/Version.h includes a Version.inc that Debian's liblld-22-dev
// does not ship; the function itself is in liblldCommon.
namespace lld {
std::string getLLDVersion();
}

namespace hotlink {

std::string lld_version() { return lld::getLLDVersion(); }

} // namespace hotlink
