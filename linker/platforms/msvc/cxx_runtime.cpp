#include "linker/platforms/msvc/cxx_runtime.h"
#include "base/memo.h"

#include "hotlink/link.h"
#include "linker/codegen.h"
#include "linker/platforms/coff/support.h"

#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <mutex>
#include <utility>

namespace hotlink::detail {

using exports::Arch;

namespace {

// ---------------------------------------------------------------------------
// 1. The DLLs' exports, as .def files.

// Both vcruntime140.dll and msvcrt.dll export MSVC's exception handling
// and RTTI functions under these names.
#define HOTLINK_CXX_EH_EXPORTS \
  "  _CxxThrowException\n  __CxxDetectRethrow\n  __CxxExceptionFilter\n  __CxxFrameHandler\n" \
  "  __CxxFrameHandler2\n  __CxxFrameHandler3\n  __CxxQueryExceptionSize\n" \
  "  __CxxRegisterExceptionObject\n  __CxxUnregisterExceptionObject\n  __RTCastToVoid\n" \
  "  __RTDynamicCast\n  __RTtypeid\n"

// vcruntime140.dll's C++ runtime exports (its string and memory functions
// are left to the CRT's import library, as for C code).
const char *kVcruntime140Def = "LIBRARY vcruntime140.dll\nEXPORTS\n" HOTLINK_CXX_EH_EXPORTS R"(  __C_specific_handler
  __current_exception
  __current_exception_context
  __std_exception_copy
  __std_exception_destroy
  __std_terminate
  __std_type_info_compare
  __std_type_info_destroy_list
  __std_type_info_hash
  __std_type_info_name
  __uncaught_exception
  __uncaught_exceptions
  _get_purecall_handler
  _purecall
  _set_purecall_handler
)";

// FH4, the frame handler MSVC uses since 2019 (/d2FH4), on 64-bit targets.
const char *kVcruntime140_1Def = R"(LIBRARY vcruntime140_1.dll
EXPORTS
  __CxxFrameHandler4
)";

// msvcp140.dll: what code compiled against MSVC's STL headers calls out of
// line (the 64-bit spelling of the C++ names).
const char *kMsvcp140Def = R"(LIBRARY msvcp140.dll
EXPORTS
  ?_Syserror_map@std@@YAPEBDH@Z
  ?_Throw_C_error@std@@YAXH@Z
  ?_Throw_Cpp_error@std@@YAXH@Z
  ?_Winerror_map@std@@YAHH@Z
  ?_Xbad_alloc@std@@YAXXZ
  ?_Xbad_function_call@std@@YAXXZ
  ?_Xinvalid_argument@std@@YAXPEBD@Z
  ?_Xlength_error@std@@YAXPEBD@Z
  ?_Xout_of_range@std@@YAXPEBD@Z
  ?_Xoverflow_error@std@@YAXPEBD@Z
  ?_Xruntime_error@std@@YAXPEBD@Z
  ?uncaught_exception@std@@YA_NXZ
  ?uncaught_exceptions@std@@YAHXZ
  _Cnd_broadcast
  _Cnd_destroy
  _Cnd_destroy_in_situ
  _Cnd_init
  _Cnd_init_in_situ
  _Cnd_signal
  _Cnd_timedwait
  _Cnd_wait
  _Mtx_current_owns
  _Mtx_destroy
  _Mtx_destroy_in_situ
  _Mtx_init
  _Mtx_init_in_situ
  _Mtx_lock
  _Mtx_timedlock
  _Mtx_trylock
  _Mtx_unlock
  _Query_perf_counter
  _Query_perf_frequency
  _Thrd_current
  _Thrd_detach
  _Thrd_hardware_concurrency
  _Thrd_id
  _Thrd_join
  _Thrd_sleep
  _Thrd_yield
)";

// The C++ functions msvcrt.dll exports that mingw-w64's libmsvcrt.a does
// not declare (lld takes from this only what libmsvcrt.a left undefined).
const char *kMsvcrtCxxDef = "LIBRARY msvcrt.dll\nEXPORTS\n" HOTLINK_CXX_EH_EXPORTS R"(
  __uncaught_exception
  _purecall
)";

const char *machine_of(Arch a) {
  switch (a) {
  case Arch::X86: return "x86";
  case Arch::AArch64: return "arm64";
  default: return "x64";
  }
}

// ---------------------------------------------------------------------------
// 2. The support code, as LLVM IR for each symbol.

// MSVC's C++ names are spelled for x64 (and arm64); i386 spells pointers
// without E, size_t as I and references without E.
std::string msvc_name(std::string x64, Arch arch) {
  if (arch != Arch::X86)
    return x64;
  auto replace = [&](const std::string &from, const std::string &to) {
    for (std::size_t at = x64.find(from); at != std::string::npos; at = x64.find(from, at + to.size()))
      x64.replace(at, from.size(), to);
  };
  replace("PEAX", "PAX");
  replace("AEBU", "ABU");
  replace("_K", "I");
  return x64;
}

// Fills $I (size_t), $A (its alignment), $CC (WINAPI's calling convention)
// and the names given.
std::string fill(std::string ir, Arch arch, const std::vector<std::pair<std::string, std::string>> &names = {}) {
  bool x86 = arch == Arch::X86;
  std::vector<std::pair<std::string, std::string>> all = names;
  all.push_back({"$I", x86 ? "i32" : "i64"});
  all.push_back({"$A", x86 ? "4" : "8"});
  all.push_back({"$CC", x86 ? "x86_stdcallcc" : ""});
  for (const auto &[from, to] : all)
    for (std::size_t at = ir.find(from); at != std::string::npos; at = ir.find(from, at + to.size()))
      ir.replace(at, from.size(), to);
  return ir;
}

// operator new: $ALLOC (malloc, _aligned_malloc), never null (a failed
// allocation goes to $FAIL).
const char *kNewIR = R"(
$DECLARE
declare void @"$FAIL"() noreturn
define ptr @"$SYM"($I %n$EXTRA) {
entry:
  %zero = icmp eq $I %n, 0
  %size = select i1 %zero, $I 1, $I %n
  %p = call ptr @$ALLOC($I %size$EXTRA)
  %failed = icmp eq ptr %p, null
  br i1 %failed, label %fail, label %done
fail:
  call void @"$FAIL"()
  unreachable
done:
  ret ptr %p
}
)";

// operator new(size_t, const std::nothrow_t &): may return null.
const char *kNewNothrowIR = R"(
declare ptr @malloc($I)
define ptr @"$SYM"($I %n, ptr %tag) {
entry:
  %zero = icmp eq $I %n, 0
  %size = select i1 %zero, $I 1, $I %n
  %p = call ptr @malloc($I %size)
  ret ptr %p
}
)";

const char *kDeleteIR = R"(
declare void @$FREE(ptr)
define void @"$SYM"(ptr %p$EXTRA) {
entry:
  call void @$FREE(ptr %p)
  ret void
}
)";

const char *kNothrowIR = R"(
@"?nothrow@std@@3Unothrow_t@1@B" = constant i8 0
)";

// type_info's vftable: one slot, the deleting destructor, which frees
// nothing (type_info objects are the image's constant data).
const char *kTypeInfoVftableIR = R"(
@"??_7type_info@@6B@" = constant [1 x ptr] [ptr @hotlink_type_info_dtor], align $A
define internal $THISCALL ptr @hotlink_type_info_dtor(ptr %this, i32 %flags) {
entry:
  ret ptr %this
}
)";

// The DLL entry point, the initializer sections' bounds and the DLL's own
// exit-function table (atexit, _onexit).
const char *kCrtEntryIR = R"(
@__hotlink_xi_a = constant ptr null, section ".CRT$XIA", align $A
@__hotlink_xi_z = constant ptr null, section ".CRT$XIZ", align $A
@__hotlink_xc_a = constant ptr null, section ".CRT$XCA", align $A
@__hotlink_xc_z = constant ptr null, section ".CRT$XCZ", align $A
@llvm.used = appending global [4 x ptr] [ptr @__hotlink_xi_a, ptr @__hotlink_xi_z, ptr @__hotlink_xc_a, ptr @__hotlink_xc_z], section "llvm.metadata"

@exit_fns = internal global ptr null, align $A
@exit_count = internal global $I 0, align $A
@exit_cap = internal global $I 0, align $A
@exit_lock = internal global i32 0, align 4

declare ptr @realloc(ptr, $I)
declare void @free(ptr)
declare $CC i32 @DllMain(ptr, i32, ptr)

define internal void @lock() {
entry:
  br label %try
try:
  %r = cmpxchg ptr @exit_lock, i32 0, i32 1 acquire monotonic
  %ok = extractvalue { i32, i1 } %r, 1
  br i1 %ok, label %done, label %try
done:
  ret void
}

define internal void @unlock() {
entry:
  store atomic i32 0, ptr @exit_lock release, align 4
  ret void
}

define i32 @atexit(ptr %f) {
entry:
  call void @lock()
  %n = load $I, ptr @exit_count
  %cap = load $I, ptr @exit_cap
  %full = icmp eq $I %n, %cap
  br i1 %full, label %grow, label %append
grow:
  %empty = icmp eq $I %cap, 0
  %twice = shl $I %cap, 1
  %newcap = select i1 %empty, $I 32, $I %twice
  %old = load ptr, ptr @exit_fns
  %bytes = mul $I %newcap, $A
  %new = call ptr @realloc(ptr %old, $I %bytes)
  %failed = icmp eq ptr %new, null
  br i1 %failed, label %fail, label %grown
fail:
  call void @unlock()
  ret i32 -1
grown:
  store ptr %new, ptr @exit_fns
  store $I %newcap, ptr @exit_cap
  br label %append
append:
  %fns = load ptr, ptr @exit_fns
  %slot = getelementptr ptr, ptr %fns, $I %n
  store ptr %f, ptr %slot
  %n1 = add $I %n, 1
  store $I %n1, ptr @exit_count
  call void @unlock()
  ret i32 0
}

define ptr @_onexit(ptr %f) {
entry:
  %r = call i32 @atexit(ptr %f)
  %ok = icmp eq i32 %r, 0
  %v = select i1 %ok, ptr %f, ptr null
  ret ptr %v
}

; Runs the table in reverse, then what those functions registered.
define internal void @run_exit() {
entry:
  br label %take
take:
  call void @lock()
  %fns = load ptr, ptr @exit_fns
  %n = load $I, ptr @exit_count
  store ptr null, ptr @exit_fns
  store $I 0, ptr @exit_count
  store $I 0, ptr @exit_cap
  call void @unlock()
  %none = icmp eq $I %n, 0
  br i1 %none, label %done, label %loop
loop:
  %i = phi $I [ %n, %take ], [ %j, %body ]
  %more = icmp ne $I %i, 0
  br i1 %more, label %body, label %release
body:
  %j = sub $I %i, 1
  %slot = getelementptr ptr, ptr %fns, $I %j
  %f = load ptr, ptr %slot
  call void %f()
  br label %loop
release:
  call void @free(ptr %fns)
  br label %take
done:
  ret void
}

; Runs the functions between two bounds, skipping empty slots: .CRT$XI*
; holds int (*)(void) (`checked`: nonzero refuses the load and is
; returned), .CRT$XC* void (*)(void), the static constructors.
define internal i32 @run_initializers(ptr %begin, ptr %end, i1 %checked) {
entry:
  br label %loop
loop:
  %p = phi ptr [ %begin, %entry ], [ %next, %next_block ]
  %more = icmp ult ptr %p, %end
  br i1 %more, label %body, label %done
body:
  %f = load volatile ptr, ptr %p
  %null = icmp eq ptr %f, null
  br i1 %null, label %next_block, label %call
call:
  br i1 %checked, label %call_checked, label %call_void
call_void:
  call void %f()
  br label %next_block
call_checked:
  %r = call i32 %f()
  %bad = icmp ne i32 %r, 0
  br i1 %bad, label %fail, label %next_block
next_block:
  %next = getelementptr ptr, ptr %p, i32 1
  br label %loop
fail:
  ret i32 %r
done:
  ret i32 0
}

define $CC i32 @_DllMainCRTStartup(ptr %h, i32 %reason, ptr %reserved) {
entry:
  %attach = icmp eq i32 %reason, 1
  br i1 %attach, label %init, label %not_attach
init:
  %xi = call i32 @run_initializers(ptr @__hotlink_xi_a, ptr @__hotlink_xi_z, i1 true)
  %xi_ok = icmp eq i32 %xi, 0
  br i1 %xi_ok, label %ctors, label %refuse
refuse:
  ret i32 0
ctors:
  %xc = call i32 @run_initializers(ptr @__hotlink_xc_a, ptr @__hotlink_xc_z, i1 false)
  %r1 = call $CC i32 @DllMain(ptr %h, i32 %reason, ptr %reserved)
  %ok = icmp ne i32 %r1, 0
  br i1 %ok, label %attached, label %undo
undo:
  call void @run_exit()
  ret i32 0
attached:
  ret i32 1
not_attach:
  %r2 = call $CC i32 @DllMain(ptr %h, i32 %reason, ptr %reserved)
  %detach = icmp eq i32 %reason, 0
  br i1 %detach, label %term, label %other
term:
  call void @run_exit()
  ret i32 1
other:
  ret i32 %r2
}

; DllMain when the DLL has none (/alternatename, as MSVC's CRT does).
define $CC i32 @__hotlink_default_DllMain(ptr %h, i32 %reason, ptr %reserved) {
entry:
  ret i32 1
}

!llvm.linker.options = !{!0}
!0 = !{!"/alternatename:$DLLMAIN=$DEFAULT"}
)";

// MSVC's thread-safe initialization of local statics: a guard word per
// static (0 = not yet, -1 = being initialized, else the epoch it finished
// in) and a thread-local epoch the inline check compares it with.
const char *kThreadSafeStaticsIR = R"(
@_Init_thread_epoch = thread_local global i32 -2147483648, align 4
@epoch = internal global i32 -2147483648, align 4
@srw = internal global ptr null, align $A
@cv = internal global ptr null, align $A

declare $CC void @AcquireSRWLockExclusive(ptr)
declare $CC void @ReleaseSRWLockExclusive(ptr)
declare $CC i32 @SleepConditionVariableSRW(ptr, ptr, i32, i32)
declare $CC void @WakeAllConditionVariable(ptr)

define void @_Init_thread_header(ptr %once) {
entry:
  call $CC void @AcquireSRWLockExclusive(ptr @srw)
  br label %check
check:
  %v = load volatile i32, ptr %once
  %unclaimed = icmp eq i32 %v, 0
  br i1 %unclaimed, label %claim, label %claimed
claim:
  store volatile i32 -1, ptr %once
  br label %out
claimed:
  %busy = icmp eq i32 %v, -1
  br i1 %busy, label %wait, label %done
wait:
  %w = call $CC i32 @SleepConditionVariableSRW(ptr @cv, ptr @srw, i32 -1, i32 0)
  br label %check
done:
  %e = load i32, ptr @epoch
  store i32 %e, ptr @_Init_thread_epoch
  br label %out
out:
  call $CC void @ReleaseSRWLockExclusive(ptr @srw)
  ret void
}

define void @_Init_thread_footer(ptr %once) {
entry:
  call $CC void @AcquireSRWLockExclusive(ptr @srw)
  %e = load i32, ptr @epoch
  %e1 = add i32 %e, 1
  store i32 %e1, ptr @epoch
  store volatile i32 %e1, ptr %once
  store i32 %e1, ptr @_Init_thread_epoch
  call $CC void @ReleaseSRWLockExclusive(ptr @srw)
  call $CC void @WakeAllConditionVariable(ptr @cv)
  ret void
}

define void @_Init_thread_abort(ptr %once) {
entry:
  call $CC void @AcquireSRWLockExclusive(ptr @srw)
  store volatile i32 0, ptr %once
  call $CC void @ReleaseSRWLockExclusive(ptr @srw)
  call $CC void @WakeAllConditionVariable(ptr @cv)
  ret void
}
)";

struct Member {
  std::string name; // the archive member's name
  std::string ir;
};

// Every support object for the target, each its own member.
std::vector<Member> support_members(Arch arch, bool ucrt) {
  bool x86 = arch == Arch::X86;
  // A failed allocation: std::bad_alloc from msvcp140 with the UCRT.
  std::string fail = ucrt ? "?_Xbad_alloc@std@@YAXXZ" : "abort";
  std::vector<Member> m;
  auto add = [&](const std::string &member, const char *ir,
                 std::vector<std::pair<std::string, std::string>> names) {
    m.push_back({member + ".obj", fill(ir, arch, names)});
  };
  int k = 0;
  for (const char *sym : {"??2@YAPEAX_K@Z", "??_U@YAPEAX_K@Z"})
    add("new" + std::to_string(k++), kNewIR,
        {{"$SYM", msvc_name(sym, arch)}, {"$DECLARE", "declare ptr @malloc($I)"}, {"$ALLOC", "malloc"},
         {"$EXTRA", ""}, {"$FAIL", fail}});
  for (const char *sym : {"??2@YAPEAX_KAEBUnothrow_t@std@@@Z", "??_U@YAPEAX_KAEBUnothrow_t@std@@@Z"})
    add("new" + std::to_string(k++), kNewNothrowIR, {{"$SYM", msvc_name(sym, arch)}});
  for (const char *sym : {"??2@YAPEAX_KW4align_val_t@std@@@Z", "??_U@YAPEAX_KW4align_val_t@std@@@Z"})
    add("new" + std::to_string(k++), kNewIR,
        {{"$SYM", msvc_name(sym, arch)}, {"$DECLARE", "declare ptr @_aligned_malloc($I, $I)"},
         {"$ALLOC", "_aligned_malloc"}, {"$EXTRA", ", $I %align"}, {"$FAIL", fail}});
  struct Delete {
    const char *sym, *extra, *free;
  } deletes[] = {
      {"??3@YAXPEAX@Z", "", "free"},
      {"??_V@YAXPEAX@Z", "", "free"},
      {"??3@YAXPEAX_K@Z", ", $I %size", "free"},
      {"??_V@YAXPEAX_K@Z", ", $I %size", "free"},
      {"??3@YAXPEAXAEBUnothrow_t@std@@@Z", ", ptr %tag", "free"},
      {"??_V@YAXPEAXAEBUnothrow_t@std@@@Z", ", ptr %tag", "free"},
      {"??3@YAXPEAXW4align_val_t@std@@@Z", ", $I %align", "_aligned_free"},
      {"??_V@YAXPEAXW4align_val_t@std@@@Z", ", $I %align", "_aligned_free"},
      {"??3@YAXPEAX_KW4align_val_t@std@@@Z", ", $I %size, $I %align", "_aligned_free"},
      {"??_V@YAXPEAX_KW4align_val_t@std@@@Z", ", $I %size, $I %align", "_aligned_free"},
  };
  k = 0;
  for (const Delete &d : deletes)
    add("delete" + std::to_string(k++), kDeleteIR,
        {{"$SYM", msvc_name(d.sym, arch)}, {"$EXTRA", d.extra}, {"$FREE", d.free}});
  add("nothrow", kNothrowIR, {});
  add("type_info_vftable", kTypeInfoVftableIR, {{"$THISCALL", x86 ? "x86_thiscallcc" : ""}});
  add("dll_entry", kCrtEntryIR,
      {{"$DLLMAIN", x86 ? "_DllMain@12" : "DllMain"},
       {"$DEFAULT", x86 ? "___hotlink_default_DllMain@12" : "__hotlink_default_DllMain"}});
  add("thread_safe_statics", kThreadSafeStaticsIR, {});
  return m;
}

Expected<std::vector<std::uint8_t>> support_archive(const TargetInfo &target, bool ucrt) {
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> objects;
  for (const Member &m : support_members(target.arch, ucrt)) {
    auto obj = compile_ir(target.triple, m.ir, m.name);
    if (!obj)
      return obj.take_error();
    objects.emplace_back(m.name, std::move(obj.value()));
  }
  std::vector<llvm::NewArchiveMember> members;
  for (const auto &[name, bytes] : objects) {
    llvm::NewArchiveMember nm(llvm::MemoryBufferRef(
        llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), name));
    members.push_back(std::move(nm));
  }
  auto out = llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab,
                                        llvm::object::Archive::K_GNU, /*Deterministic=*/true, /*Thin=*/false);
  if (!out)
    return make_error(ErrorCode::Internal, "cannot write the MSVC C++ support archive: " +
                                               llvm::toString(out.takeError()));
  return std::vector<std::uint8_t>((*out)->getBufferStart(), (*out)->getBufferEnd());
}

Expected<MsvcCxxRuntime::Library> import_library(const char *def, const std::string &name, Arch arch) {
  auto lib = import_library_from_def(def, name + ".def", machine_of(arch));
  if (!lib)
    return lib.take_error();
  return MsvcCxxRuntime::Library{name + ".lib", std::move(lib->bytes)};
}

// The names an archive's symbol table lists.
void add_symbols(const std::vector<std::uint8_t> &bytes, std::vector<std::string> &out) {
  llvm::MemoryBufferRef ref(llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), "lib");
  auto archive = llvm::object::Archive::create(ref);
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return;
  }
  for (const llvm::object::Archive::Symbol &sym : (*archive)->symbols())
    out.push_back(sym.getName().str());
}

Expected<std::shared_ptr<const MsvcCxxRuntime>> build(const TargetInfo &target, bool ucrt) {
  auto rt = std::make_shared<MsvcCxxRuntime>();
  auto archive = support_archive(target, ucrt);
  if (!archive)
    return archive.take_error();
  rt->before_crt.push_back({"hotlink-msvc-cxx.lib", std::move(archive.value())});
  std::vector<std::pair<const char *, std::string>> imports;
  if (ucrt) {
    imports.push_back({kVcruntime140Def, "vcruntime140"});
    if (target.arch != Arch::X86) {
      imports.push_back({kVcruntime140_1Def, "vcruntime140_1"});
      imports.push_back({kMsvcp140Def, "msvcp140"}); // spelled for 64-bit targets
    }
  }
  for (const auto &[def, name] : imports) {
    auto lib = import_library(def, name, target.arch);
    if (!lib)
      return lib.take_error();
    rt->before_crt.push_back(std::move(lib.value()));
  }
  if (!ucrt) {
    auto lib = import_library(kMsvcrtCxxDef, "msvcrt-cxx", target.arch);
    if (!lib)
      return lib.take_error();
    rt->after_crt.push_back(std::move(lib.value()));
  }
  rt->entry = "_DllMainCRTStartup";
  for (const MsvcCxxRuntime::Library &lib : rt->before_crt)
    add_symbols(lib.bytes, rt->provides);
  return std::shared_ptr<const MsvcCxxRuntime>(rt);
}

} // namespace

Expected<std::shared_ptr<const MsvcCxxRuntime>> msvc_cxx_runtime(const TargetInfo &target, const std::string &crt) {
  static base::Memo<std::string, std::shared_ptr<const MsvcCxxRuntime>> known;
  return known.compute_once(target.triple + "/" + crt,
                            [&]() -> Expected<std::shared_ptr<const MsvcCxxRuntime>> {
                              auto rt = build(target, crt != "msvcrt");
                              if (!rt)
                                return rt.take_error();
                              return std::shared_ptr<const MsvcCxxRuntime>(rt.value());
                            });
}

bool is_exit_registration(const std::string &symbol) {
  return symbol == "atexit" || symbol == "_atexit" || symbol == "_onexit" || symbol == "__onexit";
}

bool may_need_msvc_cxx(const std::string &symbol) {
  llvm::StringRef s(symbol);
  if (s.starts_with("?") || is_exit_registration(symbol))
    return true;
  s.consume_front("_"); // i386's C prefix
  for (const char *prefix : {"_Cxx", "__Cxx", "_RT", "__RT", "__std_", "_Init_thread", "_current_exception",
                             "__current_exception", "_uncaught_exception", "__uncaught_exception",
                             "_Query_perf", "_Thrd_", "_Mtx_", "_Cnd_"})
    if (s.starts_with(prefix))
      return true;
  return false;
}

} // namespace hotlink::detail
