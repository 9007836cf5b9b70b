#!/usr/bin/python3
"""halide_cache: a persistent cache of compiled Halide pipelines (Halide's
"serializing JIT compilation" request), with Debian's python3-halide.

The key is computed before compiling, from what determines the code: the
pipeline's definition and schedule (this file's define_blur source), the
Halide version and the target. On a miss the pipeline is compiled with
Halide's compile_to_object, linked in-process by hotlink and stored; on a
hit, a later process loads the stored shared object and skips both. Either
way the pipeline is called through its blur_argv entry point with real
buffers, and the output is checked against Halide's own realize().

    PYTHONPATH=build/python /usr/bin/python3 samples/halide_cache.py [CACHE_DIR]

CACHE_DIR defaults to $XDG_CACHE_HOME/hotlink (~/.cache/hotlink).
Prints "cache miss" or "cache hit", each step's time, and the time saved.
Exit code 0 when the output equals Halide's, 1 otherwise."""
import ctypes
import hashlib
import inspect
import os
import sys
import tempfile
import time

import halide as hl
import hotlink

WIDTH, HEIGHT = 640, 480


def define_blur():
    """A 3x3 box blur of a 16-bit image: parallel over rows, vectorized."""
    x, y, xi, yi = hl.Var("x"), hl.Var("y"), hl.Var("xi"), hl.Var("yi")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    clamped = hl.BoundaryConditions.repeat_edge(inp)
    blur_x = hl.Func("blur_x")
    blur_x[x, y] = (clamped[x - 1, y] + clamped[x, y] + clamped[x + 1, y]) / 3
    blur = hl.Func("blur")
    blur[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    blur.tile(x, y, xi, yi, 64, 32).vectorize(xi, 8).parallel(y)
    blur_x.compute_at(blur, x).vectorize(x, 8)
    return inp, blur


def target():
    """The host, without the feature Halide 14 assumes on CPUs that report
    most of AVX-512 but not AVX512-FP16 (an illegal instruction otherwise)."""
    return hl.get_host_target().without_feature(hl.TargetFeature.AVX512_SapphireRapids)


def cache_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hotlink")


# --- halide_buffer_t, as Halide 14's runtime lays it out -----------------------

class Dimension(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("extent", ctypes.c_int32), ("stride", ctypes.c_int32),
                ("flags", ctypes.c_uint32)]


class HalideType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class HalideBuffer(ctypes.Structure):
    _fields_ = [("device", ctypes.c_uint64), ("device_interface", ctypes.c_void_p),
                ("host", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("type", HalideType),
                ("dimensions", ctypes.c_int32), ("dim", ctypes.POINTER(Dimension)),
                ("padding", ctypes.c_void_p)]


def uint16_image(pixels):
    """A 2-D uint16 halide_buffer_t over `pixels` (row-major, WIDTH x HEIGHT)."""
    dims = (Dimension * 2)(Dimension(0, WIDTH, 1, 0), Dimension(0, HEIGHT, WIDTH, 0))
    buf = HalideBuffer(0, None, ctypes.cast(pixels, ctypes.c_void_p), 0, HalideType(1, 16, 1), 2, dims, None)
    return buf, dims  # dims must outlive buf


def pixel(i, j):
    return (i * 7 + j * 13 + (i * j) % 31) % 4096


def main():
    inp, blur = define_blur()
    tgt = target()
    key = hashlib.sha256("\0".join([inspect.getsource(define_blur), hl.__name__, "halide-14",
                                    str(tgt)]).encode()).hexdigest()
    cache = hotlink.Cache(cache_dir())
    timings = {}

    def produce():
        """A miss: Halide compiles the pipeline to an object, hotlink links it."""
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            blur.compile_to_object(os.path.join(d, "blur.o"), [inp], "blur", tgt)
            t1 = time.perf_counter()
            with open(os.path.join(d, "blur.o"), "rb") as f:
                result = hotlink.link([("blur.o", f.read())])
            timings["compile"] = (t1 - t0) * 1e3
            timings["link"] = (time.perf_counter() - t1) * 1e3
            return result

    t0 = time.perf_counter()
    entry = cache.get_or_build("halide:blur:" + key, produce)
    library = entry.load()
    ready_ms = (time.perf_counter() - t0) * 1e3
    if entry.hit:
        print(f"cache hit: loaded in {ready_ms:.2f} ms; compiling and linking took {entry.build_ms:.1f} ms "
              f"when it was built, so this start saved {entry.build_ms - ready_ms:.1f} ms")
    else:
        print(f"cache miss: Halide compiled in {timings['compile']:.1f} ms, hotlink linked in "
              f"{timings['link']:.2f} ms, stored and loaded in {ready_ms:.1f} ms in all")
    print(f"  {entry.name} ({len(entry.artifact)} bytes) exports {', '.join(entry.exports)}; in {cache.dir}")

    # Call it through blur_argv: int blur_argv(void **args), one pointer per
    # argument (the input buffer, then the output buffer).
    source = (ctypes.c_uint16 * (WIDTH * HEIGHT))(*[pixel(i, j) for j in range(HEIGHT) for i in range(WIDTH)])
    output = (ctypes.c_uint16 * (WIDTH * HEIGHT))()
    in_buf, _in_dims = uint16_image(source)
    out_buf, _out_dims = uint16_image(output)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(in_buf), ctypes.addressof(out_buf))
    blur_argv = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(library.symbol("blur_argv"))
    t0 = time.perf_counter()
    rc = blur_argv(args)
    print(f"  blur_argv: {rc} in {(time.perf_counter() - t0) * 1e3:.2f} ms")

    # Halide's own answer, JIT-compiled in this process.
    image = hl.Buffer(hl.UInt(16), [WIDTH, HEIGHT])
    for j in range(HEIGHT):
        for i in range(WIDTH):
            image[i, j] = pixel(i, j)
    inp.set(image)
    expected = blur.realize([WIDTH, HEIGHT], tgt)
    wrong = sum(1 for j in range(HEIGHT) for i in range(WIDTH) if output[j * WIDTH + i] != expected[i, j])
    print(f"  {WIDTH}x{HEIGHT} pixels, {wrong} differ from Halide's realize()")
    library.close()
    return 0 if rc == 0 and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
