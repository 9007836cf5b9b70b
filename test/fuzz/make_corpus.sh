#!/usr/bin/env bash
# Seed corpora for the fuzzers, made from the same kind of fixtures the
# tests compile at run time (nothing binary is committed): objects for all
# eight targets (and a COFF /bigobj), archives, the artifacts hotlink links
# from them, a signed statement, .def files and export-name lists.
#   usage: make_corpus.sh OUT_DIR HOTLINK_CLI
# Writes OUT_DIR/{fuzz_objects,fuzz_verify,fuzz_def,fuzz_writers,fuzz_code_object,fuzz_images,fuzz_glob,fuzz_manifest}/.
set -euo pipefail
mkdir -p "$1"
out=$(cd "$1" && pwd)   # absolute: the script works in a scratch directory
hotlink=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
clang=${CLANG:-clang-22}
ar=${LLVM_AR:-llvm-ar-22}
mkdir -p "$out"/{fuzz_objects,fuzz_verify,fuzz_def,fuzz_writers,fuzz_code_object,fuzz_images,fuzz_glob,fuzz_manifest}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# A Halide-style kernel: entry points, data, a weak function, floating
# point (COFF: _fltused), a big stack frame (__chkstk) and a helper.
cat > kernel.c <<'C'
int scale = 3;
const int table[4] = {1, 2, 3, 4};
static int helper(int x) { return x * scale + table[x & 3]; }
__attribute__((weak)) int weak_hook(int x) { return x; }
int f(int x) { volatile char big[8192]; big[x & 8191] = (char)x; return helper(x) + big[0]; }
int f_argv(void **a) { *(float *)a[1] = (float)f(*(int *)a[0]) * 0.5f; return 0; }
const void *f_metadata(void) { return table; }
C
cat > other.c <<'C'
int other(int x) { return x - 1; }
int other_argv(void **a) { *(int *)a[1] = other(*(int *)a[0]); return 0; }
C

# What image::read_elf_object must read as LLVM does (fuzz_objects compares
# the two): C++ with a static constructor (.init_array, COMDAT groups),
# thread-locals, common and hidden symbols, sections of their own, debug
# sections, and (AArch64) mapping symbols.
cat > rich.cpp <<'C'
struct Counter { int n; Counter() : n(7) {} };
static Counter counter;
thread_local int per_thread = 3;
__attribute__((visibility("hidden"))) int hidden_value = 5;
extern "C" __attribute__((weak)) int weak_fn(int x) { return x; }
extern "C" int defined_elsewhere(int);
template <class T> T twice(T v) { return v + v; }
extern "C" int rich(int x) { return twice(x) + counter.n + per_thread + hidden_value + defined_elsewhere(x); }
C
for t in x86_64-linux-gnu aarch64-linux-gnu; do
  $clang -x c++ --target=$t -O1 -fPIC -g -ffunction-sections -fdata-sections -c rich.cpp \
    -o "$out/fuzz_objects/$t-rich.o"
  $clang --target=$t -O1 -fPIC -fcommon -c -x c - -o "$out/fuzz_objects/$t-common.o" <<'C'
int shared_counter;
__attribute__((section(".ctors"))) void (*legacy_init)(void) = 0;
int use(void) { return shared_counter; }
C
done

i=0
for t in x86_64-linux-gnu aarch64-linux-gnu x86_64-pc-windows-msvc i686-pc-windows-msvc \
         aarch64-pc-windows-msvc x86_64-apple-macos arm64-apple-macos wasm32-unknown-unknown; do
  i=$((i + 1))
  case $t in
    *windows*) ext=dll ;;
    *apple*) ext=dylib ;;
    wasm*) ext=wasm ;;
    *) ext=so ;;
  esac
  flags="-O1 -fno-stack-protector"
  [[ $t == *linux* ]] && flags="$flags -fPIC"
  $clang --target=$t $flags -c kernel.c -o k$i.o
  $clang --target=$t $flags -c other.c -o o$i.o
  cp k$i.o "$out/fuzz_objects/$t.o"
  $ar rcs "$out/fuzz_objects/$t.a" k$i.o o$i.o
  def=()
  [[ $ext == dll ]] && def=(--def "k$i.def")
  "$hotlink" link --target $t -o k$i.$ext "${def[@]}" k$i.o >/dev/null
  cp k$i.$ext "$out/fuzz_verify/$t.$ext"
  cp k$i.$ext "$out/fuzz_objects/$t.$ext"
  if [[ $ext == dll ]]; then
    # The first byte picks the machine the .def is read for (fuzz_def.cpp).
    { printf '\000'; cat k$i.def; } > "$out/fuzz_def/$t.def"
    { printf '\001'; "$hotlink" exports --target $t --policy all --format def k$i.o; } \
      > "$out/fuzz_def/$t-all.def"
  fi
  "$hotlink" exports --target $t --policy all --format list k$i.o | tr '\n' '\0' \
    > "$out/fuzz_writers/$t.names"
done
$clang --target=x86_64-pc-windows-msvc -O1 -Wa,-mbig-obj -c kernel.c -o bigobj.o
cp bigobj.o "$out/fuzz_objects/x86_64-bigobj.obj"

# AMDGPU objects and code objects (v4 and v5; wave64 and wave32), one
# with a kernel using LDS.
cat > device.c <<'C'
__attribute__((device_kernel)) void add(float *a, const float *b, int n) {
  __attribute__((address_space(3), loader_uninitialized)) static float tile[64];
  int i = __builtin_amdgcn_workitem_id_x();
  tile[i & 63] = b[i];
  if (i < n) a[i] += tile[63 - (i & 63)];
}
C
for cpu in gfx90a:4 gfx1030:5; do
  $clang --target=amdgcn-amd-amdhsa -mcpu=${cpu%:*} -nogpulib -mcode-object-version=${cpu#*:} -O2 -c device.c \
    -o device-${cpu%:*}.o
  "$hotlink" link --target amdgcn-amd-amdhsa --mcpu ${cpu%:*} -o device-${cpu%:*}.hsaco device-${cpu%:*}.o >/dev/null
  cp device-${cpu%:*}.o device-${cpu%:*}.hsaco "$out/fuzz_code_object/"
  cp device-${cpu%:*}.o "$out/fuzz_objects/"
done

# A signed statement, as `hotlink sign` writes and a remote cache serves.
"$hotlink" keygen -o key >/dev/null
$clang -O1 -fPIC -c kernel.c -o kernel.o
"$hotlink" link -o k.so kernel.o >/dev/null
"$hotlink" sign --key key k.so -o k.so.sig >/dev/null
cp k.so.sig "$out/fuzz_verify/statement.sig"

# The host images image/ reads (fuzz_images): the ELF and PE artifacts
# above, a host .so with its runtime environment (DT_NEEDED, a build-id),
# a mingw DLL, and an executable of each format.
cp "$out"/fuzz_verify/*.so "$out"/fuzz_verify/*.dll k.so "$out/fuzz_images/"
$clang --target=x86_64-w64-mingw32 -O1 -c kernel.c -o mingw.o
"$hotlink" link --target x86_64-w64-mingw32 -o mingw.dll mingw.o >/dev/null && cp mingw.dll "$out/fuzz_images/"
$clang -O1 -o exe kernel.c -Wl,--defsym=main=f 2>/dev/null && cp exe "$out/fuzz_images/host.exe.elf"

# Glob patterns over names (fuzz_glob: PATTERN NUL NAME NUL NAME...): sets,
# ranges, negation, escapes, and what is literal without brace expansion.
printf '_Z*Kernel?[0-9]\000_ZN6Kernel3runEv\000_ZN6Kernel1Ev\000k' > "$out/fuzz_glob/sets"
printf '[!a-c]x[]]\\*{a,b}\000dx]*{a,b}\000ax]*{a,b}' > "$out/fuzz_glob/negation"
printf '*[^_]*_argv\000f_argv\000_argv\000g__argv' > "$out/fuzz_glob/entries"

# Manifests (fuzz_manifest: a statement's JSON line): one as hotlink writes
# it, one with a companion, integral numbers written as floats, the older
# build_ms, and what a reader must take as the last value or ignore:
# repeated keys, unknown fields, nested values.
h=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
printf '{"blake3":"%s","build_us":888,"created":1796687471,"exports":["f","f_argv"],"format":1,"hotlink_version":"0.1.0","key":"%s","linker_version":"Debian LLD 22.1.8","name":"k.so","size":2264,"target":"x86_64-pc-linux-gnu"}' \
  $h $h > "$out/fuzz_manifest/written"
printf '{"blake3":"%s","build_ms":4.25,"created":1.796687471e9,"def":{"blake3":"%s","size":31.0},"exports":["f"],"format":1.0,"hotlink_version":"0.1.0","key":"%s","linker_version":"","name":"k.dll","size":5120.0,"target":"x86_64-pc-windows-msvc"}' \
  $h $h $h > "$out/fuzz_manifest/companion"
printf '{"blake3":"%s","created":1,"exports":[],"format":1,"hotlink_version":"","implib":{"size":2},"key":"%s","linker_version":"","name":"k.dll","size":1,"target":"t"}' \
  $h $h > "$out/fuzz_manifest/incomplete"
printf '{"format":1,"exports":[1],"exports":["a"],"key":"k","name":"n","target":"t","size":1,"size":2,"blake3":"b","created":0,"hotlink_version":"v","linker_version":"l","extra":{"format":2,"exports":5},"pdb":[1],"build_us":-5,"build_ms":1e400}' \
  > "$out/fuzz_manifest/repeated"

# .def syntax beyond what hotlink writes.
printf '\000LIBRARY "my lib.dll"\nEXPORTS\n  f @1 NONAME\n  g=internal_g PRIVATE\n  v DATA\n  h == h2\n' \
  > "$out/fuzz_def/features.def"
printf '\001NAME app.exe\nEXPORTS\n  _f@8\n  @g@4 @7\nHEAPSIZE 1024,512\nSTACKSIZE 4096\nVERSION 1.2\n' \
  > "$out/fuzz_def/i386.def"
# Names that exercise each writer's refusals.
printf 'f\000f_argv\000f_metadata\000a b\000x"y\000p*q\000#c\000DATA\000@o\000k=v\000l;m\000' \
  > "$out/fuzz_writers/hostile.names"

# NVIDIA inputs: PTX, and where CUDA's fatbinary is installed, fat binaries
# holding it (zstd-compressed, fatbinary's default, and plain).
cat > device.cu <<'C'
extern "C" __attribute__((device)) int __nvvm_read_ptx_sreg_tid_x();
extern "C" __attribute__((global)) void scale(int *a, int k) { a[__nvvm_read_ptx_sreg_tid_x()] *= k; }
C
$clang -x cuda --cuda-device-only -S --cuda-gpu-arch=sm_90 -nocudainc -nocudalib -O2 -Wno-unknown-cuda-version \
  device.cu -o device.ptx
cp device.ptx "$out/fuzz_objects/"
fatbinary=${CUDA_HOME:-/usr/local/cuda}/bin/fatbinary
if [[ -x $fatbinary ]]; then
  "$fatbinary" -64 --create=device.fatbin --image3=kind=ptx,sm=90,file=device.ptx
  "$fatbinary" -64 --compress=false --create=device-plain.fatbin --image3=kind=ptx,sm=90,file=device.ptx
  cp device.fatbin device-plain.fatbin "$out/fuzz_objects/"
fi
# Where nvcc is installed, what CUDA's separate compilation hands a device
# link: host objects carrying relocatable device code and LTO-IR, and an
# archive of them.
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [[ -x $nvcc ]]; then
  printf 'extern "C" __global__ void scale(int *a, int k) { a[threadIdx.x] *= k; }\n' > rdc.cu
  "$nvcc" -rdc=true -c -arch=sm_90 rdc.cu -o rdc.o
  "$nvcc" -rdc=true -c -gencode=arch=compute_90,code=lto_90 rdc.cu -o rdc-lto.o
  $ar rcs librdc.a rdc.o rdc-lto.o
  cp rdc.o rdc-lto.o librdc.a "$out/fuzz_objects/"
fi
