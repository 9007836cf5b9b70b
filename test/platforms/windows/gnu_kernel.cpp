// A GNU-ABI C++ kernel (x86_64-w64-mingw32): throws in one function and
// catches in another, builds std::strings, and has a static object whose
// constructor runs when the DLL loads.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
struct Table {
  std::vector<std::string> names;
  Table() : names{"zero", "one", "two"} {}
};
Table table; // constructed by the runtime's DLL entry point

std::string describe(int n) {
  if (n < 0)
    throw std::out_of_range("negative: " + std::to_string(n));
  return n < (int)table.names.size() ? table.names[n] : "n=" + std::to_string(n);
}
} // namespace

extern "C" __declspec(dllexport) int kernel(int n, char *out, int cap) {
  try {
    std::string s = describe(n);
    std::snprintf(out, cap, "%s", s.c_str());
    return (int)s.size();
  } catch (const std::exception &e) {
    std::snprintf(out, cap, "caught %s", e.what());
    return -1;
  }
}
