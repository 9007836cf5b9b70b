// The versions `hotlink --version` and hotlink_version() report.
#include "linker/linker.h"

#include "llvm/Config/llvm-config.h"

// lld/Common/Version.h includes a Version.inc that Debian's liblld-22-dev
// does not ship; the function itself is in liblldCommon.
namespace lld {
std::string getLLDVersion();
}

namespace hotlink {

std::string version() { return HOTLINK_VERSION_STRING; }
std::string lld_version() { return lld::getLLDVersion(); }
std::string llvm_version() { return LLVM_VERSION_STRING; }

} // namespace hotlink
