// Internal. What the image store (image_store.cpp) asks of its host:
// image_store_posix.cpp and image_store_windows.cpp answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::loader::store::host {

// The store when neither LoadOptions::keep_images nor HOTLINK_KEEP_IMAGES
// names one; "" when this process has none (no home directory).
std::string default_store();

// Where a process's directory goes when the store is off or unusable, in
// the order tried.
std::vector<std::string> temporary_bases();

// Why `store` cannot hold the images this process maps (it is made when
// missing), or "".
std::string unusable(const std::string &store);

// Whether a file that a live process maps can be removed (POSIX: the
// mapping keeps it; Windows refuses, so a live process's slot is left
// whole by a prune).
bool removes_mapped_files();

// Indexes a copy just written into `store` (POSIX: its build-id links,
// `build_id` read from the bytes when null; Windows: nothing).
void index_copy(const std::string &store, const std::string &path, const std::vector<std::uint8_t> &bytes,
                const std::string *build_id);

// Between a directory and a name in the paths the store makes: '/', or
// '\\' on Windows (as LoadLibraryExW wants them).
char separator();

// This process, to tell a forked child from its parent.
std::uint64_t process_id();

} // namespace hotlink::loader::store::host
