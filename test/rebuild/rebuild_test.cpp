// Edits reach the running program: a Rebuilder compiles what changed with
// the database's command, links in-process and reloads, keeping the old
// version serving through compile errors, and carrying state.
#include "hotlink/rebuild.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace hotlink::rebuild {
namespace {

using namespace std::chrono_literals;

// A project directory with sources and a compile_commands.json as CMake
// writes it ("command" strings, objects under CMakeFiles/).
struct Project {
  std::string dir = test::temp_dir();
  std::vector<std::string> sources;

  // Saves as editors do: a temporary beside the file, renamed over it.
  void save(const std::string &name, const std::string &text) const {
    std::string tmp = dir + "/." + name + ".swp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), (dir + "/" + name).c_str()), 0);
  }
  void add(const std::string &name, const std::string &text) {
    save(name, text);
    sources.push_back(dir + "/" + name);
  }
  std::string database() const {
    std::string json = "[\n";
    for (std::size_t i = 0; i < sources.size(); ++i) {
      std::string base = sources[i].substr(sources[i].rfind('/') + 1);
      json += std::string(i ? ",\n" : "") + "{\"directory\": \"" + dir + "\", \"command\": \"" HOTLINK_TEST_CLANG
              " -I" HOTLINK_TEST_SOURCE_DIR "/include -I" + dir + "/include -O1 -fPIC -MD -MT CMakeFiles/k.dir/" + base + ".o -MF CMakeFiles/k.dir/" + base +
              ".o.d -o CMakeFiles/k.dir/" + base + ".o -c " + sources[i] + "\", \"file\": \"" + sources[i] +
              "\", \"output\": \"CMakeFiles/k.dir/" + base + ".o\"}";
    }
    std::string path = dir + "/compile_commands.json";
    std::ofstream(path) << json << "\n]\n";
    return path;
  }
  Options options() const {
    Options o;
    o.compile_commands = database();
    o.sources = sources;
    o.request.exports = exports::ExportPolicy::list({"value", "calls"});
    return o;
  }
};

std::string kernel(int value) {
  return "#include <hotlink/state.h>\n"
         "static int HOTLINK_STATE count = 0;\n"
         "int value(void) { ++count; return " + std::to_string(value) + "; }\n"
         "int calls(void) { return count; }\n";
}

struct Running {
  loader::HotModule module;
  loader::HotModule::Entry<int()> value = module.entry<int()>("value").value();
  loader::HotModule::Entry<int()> calls = module.entry<int()>("calls").value();
};

// Waits for the next build after `seen` builds.
bool next_build(const Rebuilder &rb, std::uint64_t seen) { return rb.wait_past(seen, 30s); }

Project state_project() {
  Project p;
  p.add("k.c", kernel(1));
  return p;
}

// k.c (value 1, a call count in state), built once and watched.
struct Built {
  Project p = state_project();
  Running r;
  LinkService service;
  Rebuilder rb{r.module, service, p.options()};
};

TEST(Rebuild, ASavedEditReachesTheRunningModuleOnceAndKeepsItsState) {
  Built b;
  auto &[p, r, service, rb] = b;
  ASSERT_FALSE(rb.last_error()) << rb.last_error()->to_string();
  EXPECT_EQ(rb.rebuilds(), 1u);
  EXPECT_EQ(r.value(), 1);
  EXPECT_EQ(r.value(), 1);
  for (int v = 2; v <= 4; ++v) {
    std::uint64_t seen = rb.rebuilds() + rb.failures();
    p.save("k.c", kernel(v));
    ASSERT_TRUE(next_build(rb, seen));
    ASSERT_FALSE(rb.last_error()) << rb.last_error()->to_string();
    EXPECT_EQ(r.value(), v);
  }
  EXPECT_EQ(r.calls(), 5) << "the call count is state: it survived three rebuilds";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(rb.rebuilds(), 4u) << "one rebuild per save (a temporary renamed over the file)";
  EXPECT_EQ(rb.compiles(), 4u);
}

TEST(Rebuild, ACompileErrorKeepsTheOldVersionAndNamesTheLineUntilTheFixArrives) {
  Built b;
  auto &[p, r, service, rb] = b;
  ASSERT_FALSE(rb.last_error());
  std::uint64_t seen = rb.rebuilds() + rb.failures();
  p.save("k.c", "#include <hotlink/state.h>\n"
                "static int HOTLINK_STATE count = 0;\n"
                "int value(void) { ++count; return 2 }\n" // line 3: no ';'
                "int calls(void) { return count; }\n");
  ASSERT_TRUE(next_build(rb, seen));
  auto err = rb.last_error();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::CompileFailed);
  EXPECT_NE(err->message.find("k.c:3:"), std::string::npos) << err->to_string();
  EXPECT_NE(err->message.find("error:"), std::string::npos) << err->to_string();
  EXPECT_EQ(err->input, p.dir + "/k.c");
  EXPECT_EQ(r.value(), 1) << "the old version keeps serving";
  EXPECT_EQ(rb.failures(), 1u);
  seen = rb.rebuilds() + rb.failures();
  p.save("k.c", kernel(3));
  ASSERT_TRUE(next_build(rb, seen));
  EXPECT_FALSE(rb.last_error());
  EXPECT_EQ(r.value(), 3);
  EXPECT_EQ(r.calls(), 2);
}

TEST(Rebuild, AHeaderEditRebuildsTheSourcesThatIncludeItAndNoOthers) {
  Project p;
  std::filesystem::create_directories(p.dir + "/include");
  std::ofstream(p.dir + "/include/scale.h") << "#define SCALE 2\n";
  p.add("a.c", "#include \"scale.h\"\nint a(void) { return 10 * SCALE; }\n");
  p.add("b.c", "#include <scale.h>\nint b(void) { return 100 * SCALE; }\n");
  p.add("c.c", "int c(void) { return 7; }\n");
  loader::HotModule module;
  auto a = module.entry<int()>("a").value(), b = module.entry<int()>("b").value(), c = module.entry<int()>("c").value();
  LinkService service;
  Options o = p.options();
  o.request.exports = exports::ExportPolicy::list({"a", "b", "c"});
  Rebuilder rb(module, service, o);
  ASSERT_FALSE(rb.last_error()) << rb.last_error()->to_string();
  EXPECT_EQ(a() + b() + c(), 20 + 200 + 7);
  EXPECT_EQ(rb.compiles(), 3u);
  std::uint64_t seen = rb.rebuilds() + rb.failures();
  std::string tmp = p.dir + "/include/.scale.h.tmp";
  std::ofstream(tmp) << "#define SCALE 3\n";
  ASSERT_EQ(std::rename(tmp.c_str(), (p.dir + "/include/scale.h").c_str()), 0);
  ASSERT_TRUE(next_build(rb, seen));
  ASSERT_FALSE(rb.last_error()) << rb.last_error()->to_string();
  EXPECT_EQ(a(), 30);
  EXPECT_EQ(b(), 300);
  EXPECT_EQ(rb.compiles(), 5u) << "a.c and b.c again, not c.c";
  auto watched = rb.watched();
  EXPECT_NE(std::find(watched.begin(), watched.end(), p.dir + "/include/scale.h"), watched.end());
}

TEST(Rebuild, SavingTheSameBytesRebuildsNothing) {
  Built b;
  auto &[p, r, service, rb] = b;
  ASSERT_FALSE(rb.last_error()) << rb.last_error()->to_string();
  p.save("k.c", kernel(1));
  EXPECT_FALSE(rb.wait_past(1, 500ms)) << "no build for an unchanged file";
  EXPECT_EQ(rb.compiles(), 1u);
}

TEST(Rebuild, ASourceTheDatabaseDoesNotListIsANamedError) {
  Project p = state_project();
  Options o = p.options();
  o.sources.push_back(p.dir + "/missing.c");
  Running r;
  LinkService service;
  Rebuilder rb(r.module, service, o);
  auto err = rb.last_error();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, ErrorCode::BadRequest);
  EXPECT_EQ(err->input, p.dir + "/missing.c");
  EXPECT_FALSE(r.module.current());
  o.compile_commands = p.dir + "/nothing.json";
  Rebuilder none(r.module, service, o);
  ASSERT_TRUE(none.last_error());
  EXPECT_EQ(none.last_error()->code, ErrorCode::InputNotFound);
  EXPECT_EQ(none.last_error()->input, p.dir + "/nothing.json");
}

} // namespace
} // namespace hotlink::rebuild
