// What the Windows suites share: the fixture directory the Linux build
// filled (the program's one argument), reading its files, and main().
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hotlink::test_windows {

inline std::string g_fixtures; // FIXTURE_DIR

inline std::string fixture(const std::string &name) { return g_fixtures + "/" + name; }

inline std::vector<std::uint8_t> read_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string read_text(const std::string &path) {
  std::vector<std::uint8_t> b = read_bytes(path);
  return std::string(b.begin(), b.end());
}

//   PROGRAM FIXTURE_DIR [gtest flags]
inline int run_all(int argc, char **argv, const char *program) {
  testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FIXTURE_DIR\n", program);
    return 2;
  }
  g_fixtures = argv[1];
  return RUN_ALL_TESTS();
}

} // namespace hotlink::test_windows
