#!/usr/bin/env python3
"""check_layers.py [SRC_DIR]: the source tree's layering rules (docs/architecture.md).

Checks every C source and header outside tests/, bench/ and build trees:
  1. an #include "..." reaches only the directories its layer may use
     (ALLOWED below; a file's own directory always);
  2. a private header (name ending in _int.h) is included only from its own
     directory;
  3. no source file is longer than MAX_LINES lines;
  4. a CMakeLists.txt (or *.cmake) compiles no source of another directory
     by path (${CMAKE_SOURCE_DIR}/dir/x.c, ../x.c): that directory builds it
     as a target of its own, which the other links.
Prints each offence as FILE:LINE: the #include line, the rule and the fix;
exits 1 if there is any, else 0 with a one-line summary.
"""
import os
import re
import sys

MAX_LINES = 1500

# layer (a directory) -> the directories its includes may reach, besides its own
ALLOWED = {
    "include/ameba": [],
    "strategies": ["include/ameba"],
    "properties": ["include/ameba"],
    "mri": ["include/ameba"],
    # the simulator is built from a geometry (mri/geom.h, see NARROW)
    "monitor/sim": ["include/ameba", "mri"],
    # the runtime serves the MRI: the dispatcher's and the transport's interface
    "monitor": ["include/ameba", "mri", "monitor/sim"],
    # the agent reaches the monitor through the MRI only; geometries are
    # vocabulary (mri/geom.h), not the simulator
    "agent": ["include/ameba", "mri", "agent/perfmon"],
    "agent/perfmon": ["include/ameba", "agent"],
}
# headers of another directory a layer may include (its interface), when the
# directory is allowed; anything else there is that directory's business
INTERFACE = {
    "mri": {"mri.h", "json.h", "dispatch.h", "protocol.h", "transport.h", "geom.h"},
    "monitor/sim": {"sim.h", "sim_core.h", "sim_lean.h"},
    "agent/perfmon": {"perfmon.h"},
    "agent": {"provider.h"},
}
# (layer, directory) -> the only headers of that directory the layer may
# include, narrower than the directory's INTERFACE
NARROW = {
    ("monitor/sim", "mri"): {"geom.h"},
}
# where the build's -I flags point (a quoted include is looked up here after
# the including file's directory), in the order the compilers see them
SEARCH = ["include", ".", "monitor/sim", "monitor", "agent", "mri"]
SKIP_DIRS = ("tests", "bench", "docs", "build", ".git", "examples")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# a source file named by path in a CMake file
CMAKE_SOURCE = re.compile(r'(\$\{CMAKE_SOURCE_DIR\}/|(?:\$\{CMAKE_CURRENT_SOURCE_DIR\}/)?\.\./)'
                          r'([\w./-]+\.(?:c|S|cc|cpp))\b')


def sources(root, cmake=False):
    for d, subdirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        top = rel.split(os.sep)[0]
        if rel != "." and (top in SKIP_DIRS or top.startswith("build") or top.startswith(".")):
            subdirs[:] = []
            continue
        for f in files:
            if (f == "CMakeLists.txt" or f.endswith(".cmake")) if cmake else \
               f.endswith((".c", ".h", ".S")):
                yield os.path.normpath(os.path.join(rel, f))


def cmake_by_path(root, src):
    """Rule 4: the sources another directory's files name by path in src."""
    here = os.path.dirname(src)
    with open(os.path.join(root, src), errors="replace") as f:
        for no, text in enumerate(f.read().split("\n"), 1):
            if text.lstrip().startswith("#"):
                continue
            for m in CMAKE_SOURCE.finditer(text):
                if m.group(1).startswith("${CMAKE_SOURCE_DIR}"):
                    target = os.path.normpath(m.group(2))
                else:
                    target = os.path.normpath(os.path.join(here, "..", m.group(2)))
                tdir = os.path.dirname(target)
                if tdir == here or (here and tdir.startswith(here + os.sep)):
                    continue    # its own directory, or one below it
                yield (f"{src}:{no}: {m.group(0)}: compiles {target} of {tdir or '.'}/ by "
                       f"path; build it as a target in {tdir}/CMakeLists.txt (an OBJECT "
                       f"library for other flags) and link that")


def resolve(root, src, name):
    here = os.path.dirname(src)
    for base in [here] + SEARCH:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    bad = []
    nr_files = nr_includes = 0
    for src in sorted(sources(root)):
        nr_files += 1
        layer = os.path.dirname(src)
        with open(os.path.join(root, src), errors="replace") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > MAX_LINES:
            bad.append(f"{src}:{len(lines)}: {len(lines)} lines, over the {MAX_LINES} a "
                       f"file may hold: split it along its seams (one job per file)")
        for no, text in enumerate(lines, 1):
            m = INCLUDE.match(text)
            if not m:
                continue
            nr_includes += 1
            target = resolve(root, src, m.group(1))
            if target is None:
                continue    # a generated header (configure_file) or a system one
            tdir = os.path.dirname(target)
            base = os.path.basename(target)
            if tdir == layer:
                continue
            if base.endswith("_int.h"):
                bad.append(f"{src}:{no}: {text.strip()}: {target} is private to {tdir}/; "
                           f"use {tdir}'s interface header or move what you need into it")
                continue
            allowed = ALLOWED.get(layer)
            if allowed is None:
                bad.append(f"{src}:{no}: {text.strip()}: the layer {layer}/ has no rule in "
                           f"scripts/check_layers.py (ALLOWED); add one and describe it in "
                           f"docs/architecture.md")
                continue
            if tdir not in allowed:
                bad.append(f"{src}:{no}: {text.strip()}: {layer}/ may not include from {tdir}/ "
                           f"(it may use: {', '.join(allowed) or 'nothing'}); see "
                           f"docs/architecture.md")
                continue
            iface = NARROW.get((layer, tdir), INTERFACE.get(tdir))
            if iface is not None and base not in iface:
                bad.append(f"{src}:{no}: {text.strip()}: {base} is not part of {tdir}/'s "
                           f"interface for {layer}/ ({', '.join(sorted(iface))})")
    for src in sorted(sources(root, cmake=True)):
        bad.extend(cmake_by_path(root, src))
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} offence(s) in {nr_files} files")
        return 1
    print(f"check_layers: {nr_files} files, {nr_includes} includes: layers respected, "
          f"no file over {MAX_LINES} lines, no source built by path from another directory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
