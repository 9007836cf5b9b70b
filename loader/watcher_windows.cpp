// loader/watcher.h on Windows: ReadDirectoryChangesW on the file's
// directory (a rename onto the name, a write to it, a creation), read
// overlapped so that a wait can time out or be woken by an event.
#include "loader/watcher.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "base/wide.h"

#include <cwctype>

namespace hotlink::loader {

namespace {

std::wstring folded(std::wstring s) {
  for (wchar_t &c : s)
    c = static_cast<wchar_t>(std::towlower(c));
  return s;
}

class DirectoryChanges final : public FileNotifier {
public:
  DirectoryChanges(HANDLE dir, std::wstring name) : dir_(dir), name_(folded(std::move(name))) {
    ov_.hEvent = CreateEventW(nullptr, TRUE, FALSE, nullptr);
    wake_ = CreateEventW(nullptr, FALSE, FALSE, nullptr);
  }
  ~DirectoryChanges() override {
    if (pending_) {
      CancelIoEx(dir_, &ov_);
      DWORD n;
      GetOverlappedResult(dir_, &ov_, &n, TRUE);
    }
    CloseHandle(dir_);
    CloseHandle(ov_.hEvent);
    CloseHandle(wake_);
  }
  bool usable() const { return ov_.hEvent && wake_ && (pending_ || start()); }

  bool wait(std::chrono::milliseconds timeout) override {
    if (!pending_ && !start())
      return false;
    HANDLE handles[2] = {wake_, ov_.hEvent};
    if (WaitForMultipleObjects(2, handles, FALSE, static_cast<DWORD>(timeout.count())) != WAIT_OBJECT_0 + 1)
      return false;
    DWORD n = 0;
    pending_ = false;
    if (!GetOverlappedResult(dir_, &ov_, &n, FALSE))
      return false;
    if (n == 0)
      return true; // the buffer overflowed: anything may have changed
    bool changed = false;
    for (const char *p = buf_;;) {
      const auto *info = reinterpret_cast<const FILE_NOTIFY_INFORMATION *>(p);
      std::wstring name(info->FileName, info->FileNameLength / sizeof(wchar_t));
      changed = changed || folded(name) == name_;
      if (!info->NextEntryOffset)
        break;
      p += info->NextEntryOffset;
    }
    return changed;
  }

  void wake() override { SetEvent(wake_); }

private:
  // Asks for the next batch of changes; they arrive on ov_.hEvent.
  bool start() const {
    ResetEvent(ov_.hEvent);
    pending_ = ReadDirectoryChangesW(dir_, buf_, sizeof buf_, FALSE,
                                     FILE_NOTIFY_CHANGE_FILE_NAME | FILE_NOTIFY_CHANGE_LAST_WRITE |
                                         FILE_NOTIFY_CHANGE_SIZE,
                                     nullptr, &ov_, nullptr) != 0;
    return pending_;
  }

  HANDLE dir_;
  std::wstring name_;
  mutable OVERLAPPED ov_ = {};
  HANDLE wake_ = nullptr;
  mutable bool pending_ = false;
  alignas(DWORD) mutable char buf_[16384];
};

} // namespace

std::unique_ptr<FileNotifier> file_notifier(const std::string &path) {
  std::size_t slash = path.find_last_of("/\\");
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  HANDLE h = CreateFileW(base::widen(dir).c_str(), FILE_LIST_DIRECTORY,
                         FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OVERLAPPED, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return nullptr;
  auto n = std::make_unique<DirectoryChanges>(h, base::widen(path.substr(slash == std::string::npos ? 0 : slash + 1)));
  if (!n->usable())
    return nullptr; // the host has no change notification here: the loop polls
  return n;
}

} // namespace hotlink::loader
