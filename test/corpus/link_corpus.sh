#!/usr/bin/env bash
# A fixed corpus of links, one or more per target and per family option,
# with every artifact's (and companion's) SHA-256 and the cache key of each
# link printed one a line: run it before and after a change to the planner
# or a platform, and diff the two listings. Identical lines mean identical
# bytes, and identical cache keys mean old cache entries stay valid.
#   usage: link_corpus.sh HOTLINK_CLI [OUT_DIR]
# Fixtures are compiled here with clang-22 (nothing binary is committed).
set -euo pipefail
hotlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
clang=${CLANG:-clang-22}
clangxx=${CLANGXX:-clang++-22}
ar=${LLVM_AR:-llvm-ar-22}
# clang stamps COFF objects for MSVC with the time unless told not to: the
# fixtures (and so the cache keys) must be the same from run to run.
export CCC_OVERRIDE_OPTIONS="# +-mno-incremental-linker-compatible" # "#": quietly
work=${2:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
rm -rf out cache
mkdir -p out

cat > k.c <<'C'
int scale = 3;
const int table[4] = {1, 2, 3, 4};
static int helper(int x) { return x * scale + table[x & 3]; }
__attribute__((weak)) int weak_hook(int x) { return x; }
int f(int x) { volatile char big[8192]; big[x & 8191] = (char)x; return helper(x) + big[0]; }
int f_argv(void **a) { *(float *)a[1] = (float)f(*(int *)a[0]) * 0.5f; return 0; }
const void *f_metadata(void) { return table; }
C
cat > libc.c <<'C'
typedef __SIZE_TYPE__ size_t;
void *malloc(size_t);
size_t strlen(const char *);
char *strcpy(char *, const char *);
float cosf(float);
char *dup(const char *s) { char *p = malloc(strlen(s) + 1); strcpy(p, s); return p; }
float wave(float x) { return cosf(x) + 1.0f; }
int dup_argv(void **a) { *(char **)a[1] = dup(*(const char **)a[0]); return 0; }
C
cat > cxx.cpp <<'C'
struct Base { virtual ~Base() {} virtual int get(int x) { return x; } };
struct Twice : Base { int get(int x) override { return 2 * x; } };
static Base *shape = new Twice;
extern "C" int g(int x) { if (x < 0) throw x; return shape->get(x); }
extern "C" int g_argv(void **a) { try { *(int *)a[1] = g(*(int *)a[0]); return 0; } catch (int) { return 1; } }
C
cat > other.c <<'C'
int other(int x) { return x - 1; }
int other_argv(void **a) { *(int *)a[1] = other(*(int *)a[0]); return 0; }
C
cat > nodes.ver <<'V'
V1 { global: other; };
V
cat > main.c <<'C'
int start(void) { return 0; }
C

# link NAME TARGET [hotlink link options...] -- INPUTS...
link() {
  local name=$1 target=$2
  shift 2
  local opts=() ins=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  ins=("$@")
  # The key, or the error (a refusal must stay the same refusal too).
  "$hotlink" link --json --target "$target" --cache cache "${opts[@]}" -o "out/$name" "${ins[@]}" \
    | python3 -c '
import json, sys
r = json.load(sys.stdin)
e = r.get("error")
print("key", sys.argv[1], r.get("cache_key", "") if not e else "error " + json.dumps(e, sort_keys=True))
print("diagnostics", sys.argv[1], json.dumps([d.get("message") for d in r.get("diagnostics", [])]))' "$name" || true
}

for t in x86_64-linux-gnu aarch64-linux-gnu x86_64-pc-windows-msvc i686-pc-windows-msvc \
         aarch64-pc-windows-msvc x86_64-w64-mingw32 i686-w64-mingw32 aarch64-w64-mingw32 \
         x86_64-apple-macos arm64-apple-macos wasm32-unknown-unknown; do
  case $t in
    *windows*|*mingw*) ext=dll ;;
    *apple*) ext=dylib ;;
    wasm*) ext=wasm ;;
    *) ext=so ;;
  esac
  $clang --target=$t -O1 -fno-stack-protector $([[ $t == *linux* ]] && echo -fPIC) -c k.c -o k-$t.o
  $clang --target=$t -O1 -fno-stack-protector $([[ $t == *linux* ]] && echo -fPIC) -c other.c -o o-$t.o
  $ar rcs ko-$t.a k-$t.o o-$t.o
  link k-$t.$ext $t -- k-$t.o
  link all-$t.$ext $t --policy all -- k-$t.o o-$t.o
  link ar-$t.$ext $t --export other -- ko-$t.a
  link none-$t.$ext $t --policy none -- k-$t.o
done

# ELF: the runtime environment and its options.
t=x86_64-linux-gnu
$clang --target=$t -O1 -fPIC -c libc.c -o libc-$t.o
$clangxx --target=$t -O1 -fPIC -c cxx.cpp -o cxx-$t.o
$clang --target=$t -O1 -fPIC -flto -c k.c -o k-lto.o
link libc.so $t --export dup --export wave -lm -- libc-$t.o
link libc-stubs.so $t --export dup --export wave --no-runtime-stubs -- libc-$t.o
link libc-bare.so $t --export dup --export wave --no-default-libs -- libc-$t.o
link cxx.so $t -- cxx-$t.o
link cxx-libcxx.so $t --cxx-runtime libc++ -- cxx-$t.o
link lto.so $t -- k-lto.o
link soname.so $t --soname libk.so.1 --no-symbolic -- k-$t.o
link nodes.so $t --policy all --version-script nodes.ver -- o-$t.o
link exclude.so $t --policy all --exclude-member o-$t.o -- ko-$t.a
link zdefs.so $t --export dup --no-undefined -- libc-$t.o
a=aarch64-linux-gnu
$clang --target=$a -O1 -fPIC -c libc.c -o libc-$a.o
$clangxx --target=$a -O1 -fPIC -c cxx.cpp -o cxx-$a.o
link libc-$a.so $a --export dup --export wave -- libc-$a.o
link cxx-$a.so $a -- cxx-$a.o

# COFF (MSVC ABI): companions, a sysroot, C++, an executable.
w=x86_64-pc-windows-msvc
$clang --target=$w -O1 -c libc.c -o libc-$w.o
$clangxx --target=$w -O1 -c cxx.cpp -o cxx-$w.o
$clang --target=$w -O1 -c main.c -o main-$w.o
link def.dll $w --def out/def.def --implib out/def.lib -- k-$w.o
link sysroot.dll $w --export dup --export wave --sysroot /usr/x86_64-w64-mingw32 -- libc-$w.o
link msvcrt.dll $w --export dup --sysroot /usr/x86_64-w64-mingw32 --windows-crt msvcrt -- libc-$w.o
link cxx-$w.dll $w --sysroot /usr/x86_64-w64-mingw32 -- cxx-$w.o
link main.exe $w --exe --entry start --policy none -- main-$w.o
link lib.dll $w --export dup --export wave --sysroot /usr/x86_64-w64-mingw32 -l user32 -- libc-$w.o
link nosupport.dll $w --no-support-objects --allow-undefined -- k-$w.o
i=i686-pc-windows-msvc
$clang --target=$i -O1 -c libc.c -o libc-$i.o
link sysroot-$i.dll $i --export dup --export wave --sysroot /usr/x86_64-w64-mingw32 --allow-undefined -- libc-$i.o

# COFF (GNU ABI): the mingw-w64 runtime.
m=x86_64-w64-mingw32
$clang --target=$m -O1 -c libc.c -o libc-$m.o
$clangxx --target=$m -O1 -c cxx.cpp -o cxx-$m.o
link libc-$m.dll $m --export dup --export wave --implib out/libc-$m.lib -- libc-$m.o
link cxx-$m.dll $m -- cxx-$m.o
link bare-$m.dll $m --export dup --no-default-libs --allow-undefined -- libc-$m.o

cd out
for f in $(ls | sort); do
  echo "file $f $(sha256sum < "$f" | cut -c1-64)"
done
