#!/usr/bin/env python3
"""Every function the public headers declare is defined by hotlink's libraries.

Reads the declarations with clang's own AST (so overloads and member
functions count, each by its mangled name): the free and member functions
of include/hotlink/*.h that are exported (HOTLINK_API, the C header's
visibility pragma), have no body in the header and are not pure or
deleted; then fails naming each that libhotlink.so's dynamic symbol table
does not define.
Private members and friend declarations are left out: only the library's
own code calls them (a friend that is API is declared on its own too).
  usage: public_api.py CLANG INCLUDE_DIR LIBRARY..."""
import json, os, subprocess, sys, tempfile

clang, include, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
headers = sorted(h for h in os.listdir(os.path.join(include, "hotlink")) if h.endswith(".h"))
with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as tu:
    for h in headers:
        tu.write("#include <hotlink/%s>\n" % h)
ast = subprocess.run([clang, "-x", "c++", "-std=c++17", "-I", include, "-fsyntax-only", "-Xclang", "-ast-dump=json",
                      "-Xclang", "-ast-dump-filter", "-Xclang", "hotlink", tu.name],
                     capture_output=True, text=True, check=True).stdout
os.unlink(tu.name)

FUNCTIONS = {"FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXDestructorDecl", "CXXConversionDecl"}

def visibility(node):
    for c in node.get("inner", []):
        if c.get("kind") == "VisibilityAttr":
            return c.get("visibility", "default") if "visibility" in c else "default"
    return None

declared, private = {}, set()
def walk(node, exported, path):
    if node.get("kind") == "FriendDecl":
        return  # grants access; what it names is declared (or not) on its own
    if node.get("access") == "private" and "mangledName" in node:
        private.add(node["mangledName"])
    kind = node.get("kind")
    v = visibility(node)
    if v is not None:
        exported = v == "default"
    if kind in ("CXXRecordDecl", "ClassTemplateDecl") and node.get("name"):
        path = path + [node["name"]]
    if kind in FUNCTIONS and exported and "mangledName" in node:
        body = any(c.get("kind") == "CompoundStmt" for c in node.get("inner", []))
        if not (body or node.get("inline") or node.get("isImplicit") or node.get("pure") or
                node.get("explicitlyDeleted") or node.get("explicitlyDefaulted") or
                node.get("access") == "private" or
                node.get("storageClass") == "static" and kind == "FunctionDecl"):
            declared[node["mangledName"]] = "::".join(path + [node.get("name", "?")])
    access = "private" if node.get("tagUsed") == "class" else "public"
    for c in node.get("inner", []):
        if not isinstance(c, dict):
            continue
        if c.get("kind") == "AccessSpecDecl":
            access = c.get("access", access)
        elif kind == "CXXRecordDecl" and access == "private" and "mangledName" in c:
            private.add(c["mangledName"])
        walk(c, exported, path)

decoder, at = json.JSONDecoder(), 0
while True:
    while at < len(ast) and ast[at] != "{":
        at = ast.find("\n", at) + 1 if ast[at] != "{" else at
        if at == 0:
            at = len(ast)
    if at >= len(ast):
        break
    node, at = decoder.raw_decode(ast, at)
    loc = json.dumps(node.get("loc", {}))
    walk(node, "hotlink.h" in loc or node.get("name", "").startswith("hotlink_"), [])

defined = set()
for lib in libs:
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    defined |= {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.split()}
# ast-dump-filter also prints each member alone, without its access.
missing = sorted(set(declared) - defined - private)
for m in missing:
    print("public_api: %s is declared in include/hotlink, and no library of %s defines %s" %
          (declared[m], " ".join(os.path.basename(l) for l in libs), m), file=sys.stderr)
print("public_api: %d exported functions declared, %d missing" % (len(declared), len(missing)))
sys.exit(1 if missing else 0)
