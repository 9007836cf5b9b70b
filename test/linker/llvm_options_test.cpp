// lld resets every LLVM option of the process on each call; a JIT host that
// configured LLVM (e.g. -x86-asm-syntax=intel) must keep its settings across
// in-process links. (Own binary: it changes process-wide LLVM options.)
#include "hotlink/link_service.h"
#include "test/support.h"

#include "llvm/Support/CommandLine.h"

#include <gtest/gtest.h>

namespace hotlink {
namespace {

namespace cl = llvm::cl;

cl::Option *option(const char *name) {
  auto &opts = cl::getRegisteredOptions();
  auto it = opts.find(name);
  return it == opts.end() ? nullptr : it->second;
}

template <class T> T value_of(const char *name) {
  if (auto *o = dynamic_cast<cl::opt<T, false, cl::parser<T>> *>(option(name)))
    return o->getValue();
  if (auto *o = dynamic_cast<cl::opt<T, true, cl::parser<T>> *>(option(name)))
    return o->getValue();
  ADD_FAILURE() << name << " is not of the expected type";
  return T();
}

LinkResult link_something(LinkService &service) {
  LinkRequest req;
  req.inputs = {Input::memory("k.o", test::compile_c(host_target(), "int f(int x) { return x; }"))};
  req.exports = ExportPolicy::list({"f"});
  return service.link(req);
}

TEST(LLVMOptions, ScalarOptionsSurviveALink) {
  const char *argv[] = {"host", "-stats-json", "-import-cold-multiplier=0.5",
                        "-x86-asm-syntax=intel"};
  ASSERT_TRUE(cl::ParseCommandLineOptions(4, argv, "", &llvm::nulls()));
  ASSERT_TRUE(option("stats-json") && option("import-cold-multiplier"));
  LinkService service;
  LinkResult r = link_something(service);
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_TRUE(value_of<bool>("stats-json"));
  EXPECT_EQ(option("stats-json")->getNumOccurrences(), 1);
  EXPECT_FLOAT_EQ(value_of<float>("import-cold-multiplier"), 0.5f);
  // -x86-asm-syntax is an enum: kept too, without a declaration, and
  // nothing warns.
  EXPECT_EQ(option("x86-asm-syntax")->getNumOccurrences(), 1);
  for (const Diagnostic &d : r.diagnostics)
    EXPECT_EQ(d.message.find("x86-asm-syntax"), std::string::npos) << d.message;
  // Found again by name after the link.
  const char *again[] = {"host", "-x86-asm-syntax=att"};
  option("x86-asm-syntax")->reset();
  EXPECT_TRUE(cl::ParseCommandLineOptions(2, again, "", &llvm::nulls()));
}

// Options of types LLVM's library defines without RTTI (Polly's, in
// libLLVM-22) survive a link too; looking at their type (a dynamic_cast)
// crashed the host before.
TEST(LLVMOptions, PollyOptionsSurviveALink) {
  const char *argv[] = {"host", "-polly-default-tile-size=7", "-polly-delinearize=false"};
  ASSERT_TRUE(cl::ParseCommandLineOptions(3, argv, "", &llvm::nulls()));
  LinkService service;
  for (int i = 0; i < 2; ++i) {
    LinkResult r = link_something(service);
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(option("polly-default-tile-size")->getNumOccurrences(), 1);
    EXPECT_EQ(option("polly-delinearize")->getNumOccurrences(), 1);
  }
}

TEST(LLVMOptions, DeclaredOptionsOfAnyTypeSurvive) {
  ASSERT_FALSE(set_host_llvm_options({"-x86-asm-syntax=intel"}).has_value());
  cl::Option *o = option("x86-asm-syntax");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->getNumOccurrences(), 1);
  LinkService service;
  for (int i = 0; i < 3; ++i) {
    LinkResult r = link_something(service);
    ASSERT_TRUE(r.ok());
    for (const Diagnostic &d : r.diagnostics)
      EXPECT_EQ(d.message.find("x86-asm-syntax"), std::string::npos) << d.message;
    EXPECT_EQ(o->getNumOccurrences(), 1);
  }
}

TEST(LLVMOptions, BadDeclarationIsRefused) {
  auto err = set_host_llvm_options({"-no-such-option-hotlink=1"});
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->code, ErrorCode::BadRequest);
  EXPECT_NE(err->message.find("no-such-option-hotlink"), std::string::npos) << err->message;
  EXPECT_TRUE(set_host_llvm_options({"not-an-option"}).has_value());
}

} // namespace
} // namespace hotlink
