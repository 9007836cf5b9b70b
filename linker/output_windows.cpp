// hotlink/link.h's write_output_file on Windows hosts: the file appears
// whole or not at all (base/files.h's atomic write: a temporary beside it,
// then MoveFileExW). The reservation a link makes before lld runs
// (output.h) is the linker module's, which a Windows runtime built here
// does not have; `mode` has no Windows meaning (the file takes its
// directory's ACL).
#include "hotlink/link.h"
#include "base/files.h"

#include <cerrno>

namespace hotlink {

std::optional<Error> write_output_file(const std::string &path, const std::vector<std::uint8_t> &bytes, unsigned) {
  auto failed = base::write_file_atomically(path, bytes.data(), bytes.size());
  if (!failed)
    return std::nullopt;
  return make_error(ErrorCode::OutputError, failed->to_string(), path, {},
                    failed->errnum == ENOSPC ? "free space on the output's drive"
                                             : "check that the output's directory exists and is writable");
}

} // namespace hotlink
