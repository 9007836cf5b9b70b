#!/usr/bin/python3
"""offload_cache: a Python JIT's GPU kernel as an offload runtime's AMDGPU
plugin loads it, with hotlink as the device linker and cache.

The JIT (llvmlite, Debian's python3-llvmlite, on LLVM 14) turns the
kernel's LLVM IR into device bitcode in memory; hotlink links it in-process
(LTO) into a code object for one GPU, verifies it as the HSA loader would,
and stores it; a later process gets the same image from the cache without
compiling anything. Each run also does the plugin's own way on the same
bitcode (write a file, spawn ld.lld, read the image back), times it and
checks that both images are the same bytes. No GPU is needed.

    PYTHONPATH=build/python /usr/bin/python3 samples/offload_cache.py [CACHE_DIR [PROCESSOR]]

CACHE_DIR defaults to $XDG_CACHE_HOME/hotlink-offload (~/.cache/...);
PROCESSOR is an AMD target ID (default gfx90a). Prints "cache miss" or
"cache hit" and each step's time; exit code 0 when the images match."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import llvmlite.binding as llvm

import hotlink

TRIPLE = "amdgcn-amd-amdhsa"

# y[i] = a * x[i] + y[i], for code object version 5 (offload's default).
# LLVM 14's IR: typed pointers.
KERNEL = """
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @saxpy(float %a, float addrspace(1)* %x, float addrspace(1)* %y) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr float, float addrspace(1)* %x, i32 %i
  %vx = load float, float addrspace(1)* %px
  %py = getelementptr float, float addrspace(1)* %y, i32 %i
  %vy = load float, float addrspace(1)* %py
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, float addrspace(1)* %py
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""


def ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def link_like_the_plugin(bitcode: bytes, processor: str, lld: str) -> bytes:
    """The plugin's way: a temporary file, `lld -flavor gnu --no-undefined
    -shared -plugin-opt=mcpu=X -o OUT IN` as a process, the image read back."""
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "saxpy.bc"), os.path.join(d, "saxpy.hsaco")
        with open(src, "wb") as f:
            f.write(bitcode)
        subprocess.run([lld, "--no-undefined", "-shared", f"-plugin-opt=mcpu={processor}", "-o", out, src],
                       check=True)
        with open(out, "rb") as f:
            return f.read()


def main() -> int:
    cache_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hotlink-offload")
    processor = sys.argv[2] if len(sys.argv) > 2 else "gfx90a"
    lld = os.environ.get("HOTLINK_LD_LLD") or shutil.which("ld.lld-22") or shutil.which("ld.lld")
    linker = hotlink.Linker(cache=hotlink.Cache(cache_dir))

    t0 = time.perf_counter()  # 1. the JIT hands over device bitcode
    llvm.initialize()
    bitcode = llvm.parse_assembly(KERNEL).as_bitcode()
    jit_ms = ms_since(t0)

    t0 = time.perf_counter()  # 2. a hit, or an in-process LTO link, verified and stored
    result = linker.link([("saxpy.bc", bitcode)], target=TRIPLE, mcpu=processor)
    link_ms = ms_since(t0)

    t0 = time.perf_counter()  # 3. what the HSA loader checks, before the driver gets it
    image = result.artifact
    described = hotlink.verify(image, "saxpy.hsaco", target=TRIPLE, mcpu=processor, expected=["saxpy"])
    verify_ms = ms_since(t0)

    t0 = time.perf_counter()  # 4. the plugin's way, same bitcode, same run
    theirs = link_like_the_plugin(bitcode, processor, lld)
    plugin_ms = ms_since(t0)

    print(f"offload_cache.py: saxpy for {processor}, {len(bitcode)} bytes of device bitcode from llvmlite "
          f"in {jit_ms:.2f} ms")
    if result.cache == "hit":
        print(f"hotlink: cache hit, a {len(image)}-byte code object in {link_ms:.2f} ms "
              "(nothing compiled or linked)")
    else:
        print(f"hotlink: cache miss, linked in-process (LTO) in {link_ms:.2f} ms and stored in {cache_dir}; "
              "run again for a cache hit")
    print(f"verified as the HSA loader would in {verify_ms:.2f} ms: target ID {described['target_id']}, "
          f"code object version {described['code_object_version']}")
    for kernel in described["exports"]:
        print(f"  kernel {kernel['name']}: " +
              " ".join(f"{k}={v}" for k, v in kernel.items() if k != "name"))
    same = theirs == image
    print(f"the plugin's way (write the bitcode, spawn ld.lld, read the image): {plugin_ms:.2f} ms, "
          f"{plugin_ms / link_ms:.1f}x hotlink's; same bytes: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
