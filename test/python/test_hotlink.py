"""The Python package as a user drives it: bytes in, bytes out, a cache,
ctypes calls, hot reload, and hotlink.Error with hotlink's codes.

Run by ctest (python.package) with /usr/bin/python3, PYTHONPATH pointing at
the built package and HOTLINK_TEST_CLANG naming clang-22."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import unittest

import hotlink

CLANG = os.environ.get("HOTLINK_TEST_CLANG", "clang-22")
SCALE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def kernel(factor: int) -> bytes:
    """An object defining scale(x) = x * factor, and its scale_argv companion."""
    src = (f"int scale(int x) {{ return x * {factor}; }}\n"
           "int scale_argv(void **a) { *(int *)a[1] = scale(*(int *)a[0]); return 0; }\n")
    return subprocess.run([CLANG, "-x", "c", "-O2", "-fPIC", "-c", "-", "-o", "-"],
                          input=src.encode(), capture_output=True, check=True).stdout


def device_code(source: str, cpu: str, bitcode: bool = False) -> bytes:
    """A device object (or LLVM bitcode) for amdgcn-amd-amdhsa, code object v4."""
    flags = ["--target=amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-nogpulib", "-mcode-object-version=4", "-O2"]
    if bitcode:
        flags.append("-emit-llvm")
    return subprocess.run([CLANG, *flags, "-x", "c", "-c", "-", "-o", "-"],
                          input=source.encode(), capture_output=True, check=True).stdout


SAXPY = ("__attribute__((device_kernel)) void saxpy(float a, float *x, float *y) {\n"
         "  int i = __builtin_amdgcn_workitem_id_x(); y[i] = a * x[i] + y[i]; }\n")
SIN = ("float __ocml_sin_f32(float);\n"
       "__attribute__((device_kernel)) void wave(float *a) {\n"
       "  int i = __builtin_amdgcn_workitem_id_x(); a[i] = __ocml_sin_f32(a[i]); }\n")


# A PTX module with one kernel, written for sm_80.
PTX = (".version 8.0\n.target sm_80\n.address_size 64\n"
       ".visible .entry twice(.param .u64 a)\n{\n  ret;\n}\n").encode()


class NvidiaCubin(unittest.TestCase):
    def test_ptx_links_for_its_architecture_and_verifies_against_it(self):
        try:
            r = hotlink.link([("twice.ptx", PTX)], target="nvptx64-nvidia-cuda", mcpu="sm_90")
        except hotlink.Error as e:
            if "nvJitLink is not installed" in str(e):
                self.skipTest(str(e))
            raise
        self.assertEqual(r.exports, ["twice"])
        d = hotlink.verify(r.artifact, "twice.cubin", target="nvptx64-nvidia-cuda", mcpu="sm_90",
                           expected=["twice"])
        self.assertEqual(d["arch"], "sm_90")
        self.assertEqual([k["name"] for k in d["exports"]], ["twice"])
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.verify(r.artifact, "twice.cubin", target="nvptx64-nvidia-cuda", mcpu="sm_80")
        self.assertEqual(caught.exception.code, "arch-mismatch")
        self.assertIn("sm_80", str(caught.exception))


class GpuCodeObject(unittest.TestCase):
    def test_bitcode_links_for_its_processor_and_verifies_against_it(self):
        r = hotlink.link([("saxpy.bc", device_code(SAXPY, "gfx90a", bitcode=True))],
                         target="amdgcn-amd-amdhsa", mcpu="gfx90a")
        self.assertEqual(r.exports, ["saxpy", "saxpy.kd"])
        self.assertEqual(r.name, "hotlink.hsaco")
        d = hotlink.verify(r.artifact, "saxpy.hsaco", target="amdgcn-amd-amdhsa", mcpu="gfx90a",
                           expected=["saxpy"])
        self.assertEqual(d["target_id"], "gfx90a")
        self.assertEqual(d["code_object_version"], "4")
        self.assertEqual([k["name"] for k in d["exports"]], ["saxpy"])
        self.assertEqual(d["exports"][0]["kernarg_segment_size"], "24")  # float, two pointers
        self.assertEqual(d["exports"][0]["wavefront_size"], "64")
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.verify(r.artifact, "saxpy.hsaco", target="amdgcn-amd-amdhsa", mcpu="gfx1030")
        self.assertEqual(caught.exception.code, "arch-mismatch")
        self.assertIn("gfx1030", str(caught.exception))

    def test_device_libraries_are_linked_only_when_asked(self):
        sin = [("wave.o", device_code(SIN, "gfx90a"))]
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.link(sin, target="amdgcn-amd-amdhsa", mcpu="gfx90a", device_libs="none")
        self.assertEqual(caught.exception.code, "undefined-symbol")
        self.assertEqual(caught.exception.symbol, "__ocml_sin_f32")
        r = hotlink.link(sin, target="amdgcn-amd-amdhsa", mcpu="gfx90a")
        self.assertEqual(hotlink.verify(r.artifact, target="amdgcn-amd-amdhsa", mcpu="gfx90a",
                                        expected=["wave"])["exports"][0]["name"], "wave")

    def test_a_device_link_without_a_processor_names_the_option(self):
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.link([device_code(SAXPY, "gfx90a")], target="amdgcn-amd-amdhsa")
        self.assertEqual(caught.exception.code, "bad-request")
        self.assertIn("mcpu", caught.exception.symbol + caught.exception.hint)


class Link(unittest.TestCase):
    def test_bytes_in_bytes_out(self):
        r = hotlink.link([kernel(3)])
        self.assertIsInstance(r.artifact, bytes)
        self.assertEqual(r.artifact[:4], b"\x7fELF")
        self.assertEqual(r.exports, ["scale", "scale_argv"])
        self.assertEqual(r.target, hotlink.host_target())
        self.assertGreater(r.timings_ms["total"], 0)

    def test_named_exports_and_an_output_path(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "libscale.so")
            r = hotlink.link([("scale.o", kernel(2))], exports=["scale"], output=out)
            self.assertIsNone(r.artifact)
            self.assertEqual(r.path, out)
            self.assertEqual(r.exports, ["scale"])
            self.assertEqual(SCALE(ctypes.CDLL(out).scale)(21), 42)

    def test_a_truncated_object_is_an_error_with_its_code(self):
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.link([("truncated.o", kernel(1)[:40])])
        e = caught.exception
        self.assertEqual(e.code, "invalid-input")
        self.assertEqual(e.input, "truncated.o")
        self.assertIn("truncated.o", str(e))
        self.assertTrue(e.hint)

    def test_an_undefined_export_names_the_symbol(self):
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.link([kernel(1)], exports=["not_there"])
        self.assertEqual(caught.exception.code, "missing-export")
        self.assertEqual(caught.exception.symbol, "not_there")


class Load(unittest.TestCase):
    def test_load_and_call_through_ctypes(self):
        r = hotlink.link([kernel(5)])
        with hotlink.load(r.artifact, "scale.so", expected=["scale"]) as lib:
            self.assertEqual(SCALE(lib.symbol("scale"))(4), 20)
            self.assertTrue(os.path.exists(lib.path))
            with self.assertRaises(hotlink.Error) as caught:
                lib.symbol("absent")
            self.assertEqual(caught.exception.code, "missing-export")

    def test_verification_refuses_before_mapping(self):
        r = hotlink.link([kernel(5)])
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.load(r.artifact, "scale.so", expected=["other"])
        self.assertEqual(caught.exception.code, "missing-export")
        with self.assertRaises(hotlink.Error) as caught:
            hotlink.load(r.artifact, "scale.so", blake3="0" * 64)
        self.assertEqual(caught.exception.code, "hash-mismatch")


class Cache(unittest.TestCase):
    def test_get_or_build_misses_once_then_hits_in_this_and_another_process(self):
        with tempfile.TemporaryDirectory() as d:
            cache = hotlink.Cache(os.path.join(d, "cache"))
            calls = []

            def produce():
                calls.append(1)
                return hotlink.link([kernel(7)])

            first = cache.get_or_build("scale:v7", produce)
            second = cache.get_or_build("scale:v7", produce)
            self.assertFalse(first.hit)
            self.assertTrue(second.hit)
            self.assertEqual(len(calls), 1)
            self.assertEqual(first.blake3, second.blake3)
            lib = second.load()  # keep it: closing the Library unmaps the code
            self.assertEqual(SCALE(lib.symbol("scale"))(3), 21)
            # Another process with the same key: a hit, and no producer runs.
            # It loads and calls the pipeline and maps nothing of the linker
            # (the package sits on libhotlink.so; lld, LLVM and clang load
            # on a first link, the Rebuilder's on its first use).
            script = ("import ctypes, hotlink, sys\n"
                      "e = hotlink.Cache(sys.argv[1]).get_or_build('scale:v7', lambda: sys.exit(3))\n"
                      "lib = e.load()\n"
                      "f = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lib.symbol('scale'))\n"
                      "maps = open('/proc/self/maps').read()\n"
                      "heavy = [p for p in ('libLLVM', 'libclang-cpp', 'liblld', 'libhotlink-linker',\n"
                      "                     'libhotlink-rebuild') if p in maps]\n"
                      "print('hit' if e.hit else 'miss', f(5), heavy)\n")
            out = subprocess.run([sys.executable, "-c", script, os.path.join(d, "cache")],
                                 capture_output=True, text=True, env=os.environ)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.strip(), "hit 35 []")
            self.assertEqual(cache.stats()["hits"], 2)

    def test_a_producer_exception_comes_back_and_nothing_is_stored(self):
        with tempfile.TemporaryDirectory() as d:
            cache = hotlink.Cache(os.path.join(d, "cache"))

            def fail():
                raise ValueError("the JIT failed")

            with self.assertRaises(ValueError):
                cache.get_or_build("k", fail)
            e = cache.get_or_build("k", lambda: hotlink.link([kernel(2)]))
            self.assertFalse(e.hit)

    def test_opening_a_missing_cache_without_create_makes_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(hotlink.Error) as caught:
                hotlink.Cache(os.path.join(d, "typo"), create=False)
            self.assertEqual(caught.exception.code, "input-not-found")
            self.assertEqual(os.listdir(d), [])

    def test_a_linker_with_a_cache_answers_the_second_link_from_it(self):
        with tempfile.TemporaryDirectory() as d:
            linker = hotlink.Linker(hotlink.Cache(d + "/c"))
            obj = kernel(9)
            self.assertEqual(linker.link([obj]).cache, "miss")
            self.assertEqual(linker.link([obj]).cache, "hit")


class Remote(unittest.TestCase):
    """The remote tier from Python: a real redis-server on loopback."""

    def test_an_entry_one_cache_publishes_is_a_remote_hit_in_another(self):
        import gc
        import socket
        import time
        with tempfile.TemporaryDirectory() as d:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", d],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(500):
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=1).close()
                        break
                    except OSError:
                        time.sleep(0.01)
                cli = os.path.join(os.path.dirname(hotlink.__file__), "..", "bin", "hotlink")
                subprocess.run([cli, "keygen", "-o", os.path.join(d, "ci")], check=True, capture_output=True)
                url = "redis://127.0.0.1:%d" % port
                a = hotlink.Cache(os.path.join(d, "a"), remote=url, sign_key=os.path.join(d, "ci"))
                self.assertFalse(a.get_or_build("scale:v7", lambda: hotlink.link([kernel(7)])).hit)
                del a  # closing the cache drains what it publishes
                gc.collect()

                def built_again():
                    raise AssertionError("the entry was built again")

                b = hotlink.Cache(os.path.join(d, "b"), remote=url, trusted_keys=[os.path.join(d, "ci.pub")])
                entry = b.get_or_build("scale:v7", built_again)
                self.assertTrue(entry.hit)
                self.assertEqual(b.stats()["remote_hits"], 1)
                lib = entry.load()
                self.assertEqual(SCALE(lib.symbol("scale"))(3), 21)
                with self.assertRaises(hotlink.Error) as caught:  # a remote needs a key to trust
                    hotlink.Cache(os.path.join(d, "c"), remote=url)
                self.assertIn(caught.exception.code, ("bad-request", "key-error"))
            finally:
                server.kill()
                server.wait()


class Reload(unittest.TestCase):
    def test_versions_swap_a_broken_one_is_refused_and_rollback_works(self):
        module = hotlink.HotModule()
        slot = module.entry("scale")
        self.assertEqual(module.version, 0)
        self.assertEqual(module.reload(hotlink.link([kernel(1)]).artifact, "scale.so"), 1)
        with module.pin() as pin:
            self.assertEqual(SCALE(pin.address("scale"))(6), 6)
            self.assertEqual(pin.address(slot), pin.address("scale"))
        self.assertEqual(module.reload(hotlink.link([kernel(2)]).artifact, "scale.so"), 2)
        with module.pin() as pin:
            self.assertEqual(pin.version, 2)
            self.assertEqual(SCALE(pin.address("scale"))(6), 12)
        lacking = hotlink.link([kernel(3)], exports=["scale_argv"]).artifact
        with self.assertRaises(hotlink.Error) as caught:
            module.reload(lacking, "scale.so")
        self.assertEqual(caught.exception.code, "missing-export")
        self.assertEqual(module.version, 2)
        module.rollback()
        self.assertEqual(module.version, 1)
        self.assertEqual(SCALE(module.address("scale"))(6), 6)

    def test_reload_from_a_path(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "libscale.so")
            hotlink.link([kernel(4)], output=path)
            module = hotlink.HotModule()
            module.entry("scale")
            module.reload(path)
            self.assertEqual(SCALE(module.address("scale"))(2), 8)


STATE_H = os.path.join(os.path.dirname(__file__), "..", "..", "include")
COUNT = ctypes.CFUNCTYPE(ctypes.c_int)


def counter(value: int) -> str:
    return ("#include <hotlink/state.h>\n"
            "static int HOTLINK_STATE n = 0;\n"
            f"int step(void) {{ n += {value}; return n; }}\n")


class Rebuild(unittest.TestCase):
    def test_an_edit_reaches_the_module_and_a_compile_error_names_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "k.c")

            def save(text):  # as an editor saves: a temporary renamed over the file
                with open(src + ".tmp", "w") as f:
                    f.write(text)
                os.rename(src + ".tmp", src)

            save(counter(1))
            db = os.path.join(d, "compile_commands.json")
            with open(db, "w") as f:
                json.dump([{"directory": d, "file": src,
                            "arguments": [CLANG, "-I" + os.path.abspath(STATE_H), "-O1", "-fPIC",
                                          "-c", src, "-o", "k.o"]}], f)
            module = hotlink.HotModule()
            module.entry("step")
            rb = hotlink.Rebuilder(module, db, [src], exports=["step"])
            self.assertIsNone(rb.last_error)
            self.assertEqual(COUNT(module.address("step"))(), 1)
            seen = rb.rebuilds + rb.failures
            save(counter(10))
            self.assertTrue(rb.wait(seen))
            self.assertIsNone(rb.last_error)
            self.assertEqual(COUNT(module.address("step"))(), 11)  # the state came along
            self.assertTrue(any("n" == k.split(":")[-1] for k in module.state["carried"]))
            seen = rb.rebuilds + rb.failures
            save("int step(void) { return 1 }\n")
            self.assertTrue(rb.wait(seen))
            self.assertEqual(rb.last_error.code, "compile-failed")
            self.assertIn("k.c:1:", rb.last_error.message)
            self.assertEqual(COUNT(module.address("step"))(), 21)  # the old version serves
            rb.close()
            with self.assertRaises(hotlink.Error):
                rb.rebuilds


if __name__ == "__main__":
    unittest.main()
