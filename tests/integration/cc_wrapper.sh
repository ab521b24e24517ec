#!/usr/bin/env bash
# cc_wrapper.sh AMEBA ORACLE_EXPECT COMPILER
# Exercises `ameba cc`/`ameba c++` the way build systems call compilers and
# checks each result by running it: separate compile and link, multi-file
# builds, a shared library (linked, and loaded with dlopen) whose globals
# must appear in the oracle, C++, pkg-config, the dual path's choice (with
# the compiler's plugin: two bodies; one when asked, at gcc's -O0, or for
# another compiler version), and the wrapper's own errors.
set -uo pipefail
ameba=$1 expect=$2 cc=$3
case $cc in clang) cxx=clang++ ;; *) cxx=g++ ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }

cat > a.c <<'C'
#include <stdio.h>
long shared_total;
int from_b(int);
int main(void) { int v = from_b(20); printf("a+b=%d\n", v + 1); return 0; }
C
cat > b.c <<'C'
int from_b(int x) { volatile int y = x; return y * 2; }
C
# 1. compile and link in separate steps
check "compile a.c -c" "$ameba" cc --compiler "$cc" -O2 -c a.c -o a.o
check "compile b.c -c" "$ameba" cc --compiler "$cc" -O2 -c b.c -o b.o
check "link objects" "$ameba" cc --compiler "$cc" a.o b.o -o ab
check "run separately built" test "$(./ab)" = "a+b=41"
check "objects carry hooks" sh -c "nm a.o b.o | grep -q '__tsan_func_entry'"
# 2. one command, several sources
check "one-shot multi-file" "$ameba" cc --compiler "$cc" -O1 a.c b.c -o ab2
check "run one-shot" test "$(./ab2)" = "a+b=41"
check "no libtsan linked" sh -c "! ldd ./ab2 | grep -q -E 'libtsan|clang_rt'"

# 3. a shared library, linked and dlopen'd
cat > lib.c <<'C'
long lib_table[32] __attribute__((aligned(64)));
void lib_fill(void) { volatile long *t = lib_table; for (int i = 0; i < 32; i++) t[i] = i; }
C
cat > dyn.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
void lib_fill(void);
int main(int argc, char **argv) {
  lib_fill();
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  void (*f)(void) = (void (*)(void))dlsym(h, "plug_fill");
  f(); f();
  dlclose(h);
  printf("ok\n");
  return 0;
}
C
cat > plug.c <<'C'
long plug_table[16] __attribute__((aligned(64)));
void plug_fill(void) { volatile long *t = plug_table; for (int i = 0; i < 16; i++) t[i] += i; }
C
check "shared lib" "$ameba" cc --compiler "$cc" -O2 -shared -fPIC lib.c -o libwl.so
check "plugin" "$ameba" cc --compiler "$cc" -O2 -shared -fPIC plug.c -o plug.so
check "exe against lib" "$ameba" cc --compiler "$cc" -O2 dyn.c -L. -lwl -Wl,-rpath,"$tmp" -ldl -o dyn
check "run dyn" test "$(./dyn "$tmp/plug.so")" = "ok"
AMEBA_ORACLE="$tmp/dyn.json" ./dyn "$tmp/plug.so" > /dev/null
cat > dyn.expect <<'S'
bin lib_table  0 writes 32
bin plug_table 0 writes 32
bin plug_table 0 reads  32
S
check "DSO globals counted" "$expect" dyn.json dyn.expect

# 4. C++
cat > x.cpp <<'C'
#include <atomic>
#include <cstdio>
#include <vector>
struct Base { virtual int f() const { return 1; } virtual ~Base() {} };
struct Derived : Base { int f() const override { return 2; } };
std::atomic<long> total{0};
int main() {
  std::vector<Base *> v;
  for (int i = 0; i < 100; i++) v.push_back(i % 2 ? new Derived : new Base);
  for (Base *b : v) total += b->f();
  for (Base *b : v) delete b;
  std::printf("total=%ld\n", total.load());
  return 0;
}
C
check "c++ build" "$ameba" c++ --compiler "$cxx" -O2 x.cpp -o x
check "c++ run" test "$(./x)" = "total=150"

# 5. pkg-config, for build systems that cannot use the wrapper (gcc form)
if [ "$cc" = gcc ]; then
  libdir=$(cd "$(dirname "$ameba")/../lib/ameba" && pwd)
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  check "pkg-config compile" sh -c "gcc \$(pkg-config --cflags ameba-rt) -O2 -c a.c -o pa.o && gcc \$(pkg-config --cflags ameba-rt) -O2 -c b.c -o pb.o"
  check "pkg-config link" sh -c "gcc pa.o pb.o \$(pkg-config --libs ameba-rt) -o pab"
  check "pkg-config run" test "$(./pab)" = "a+b=41"
fi

# 6. the dual path (docs/dual-path.md), where this ameba has the plugin for
# the compiler (gcc: at -O1..-O3; clang: at every level); one path
# otherwise, and whenever the user or the compiler's version says so
libdir=$(cd "$(dirname "$ameba")/../lib/ameba" && pwd)
case $cc in clang) plugin=ameba_dual_llvm ;; *) plugin=ameba_dual_gcc ;; esac
dual_ref() { nm "$1" | grep -q ' U __ameba_path'; }
if [ -f "$libdir/$plugin.so" ]; then
  check "dual: -O2 object tests __ameba_path" dual_ref a.o
  check "dual: help says so" sh -c "'$ameba' cc --ameba-help | grep -q 'Dual path'"
  "$ameba" cc --compiler "$cc" --ameba-single-path -O2 -c a.c -o s1.o
  check "dual: --ameba-single-path" sh -c "! nm s1.o | grep -q __ameba_path"
  AMEBA_CC_DUAL=0 "$ameba" cc --compiler "$cc" -O2 -c a.c -o s2.o
  check "dual: AMEBA_CC_DUAL=0" sh -c "! nm s2.o | grep -q __ameba_path"
  "$ameba" cc --compiler "$cc" -O0 -c a.c -o s3.o
  if [ "$cc" = gcc ]; then
    check "dual: -O0 one path (gcc)" sh -c "! nm s3.o | grep -q __ameba_path"
  else
    check "dual: -O0 two paths (clang)" dual_ref s3.o
  fi
  check "dual: shared library too" sh -c "nm -D plug.so | grep -q ' U __ameba_path'"
  # a plugin built for another compiler version is left out, and the build goes on
  mkdir -p otherlib
  cp "$libdir/$plugin.so" otherlib/
  echo 0.0.1 > otherlib/$plugin.version
  check "dual: other compiler version builds" env AMEBA_LIBDIR="$tmp/otherlib" \
    "$ameba" cc --compiler "$cc" -O2 -c a.c -o s4.o
  check "dual: other compiler version, one path" sh -c "! nm s4.o | grep -q __ameba_path"
  # C++ with exceptions and destructors in a loop: gcc keeps such functions
  # on one path, clang copies them; the same output either way, dormant
  cat > eh.cpp <<'C'
#include <cstdio>
#include <stdexcept>
#include <string>
struct Guard { int *n; ~Guard() { ++*n; } };
static int step(int i) { if (i % 7 == 3) throw std::runtime_error("s" + std::to_string(i)); return i * 3; }
int main() {
  int sum = 0, caught = 0, guards = 0;
  for (int i = 0; i < 1000; i++) {
    Guard g{&guards};
    try { sum += step(i); } catch (const std::exception &e) { caught += (int)std::string(e.what()).size(); }
  }
  std::printf("sum=%d caught=%d guards=%d\n", sum, caught, guards);
  return 0;
}
C
  "$cxx" -O2 eh.cpp -o eh_native
  check "dual: c++ exceptions build" "$ameba" c++ --compiler "$cxx" -O2 eh.cpp -o eh
  check "dual: c++ exceptions output" test "$(./eh)" = "$(./eh_native)"
  check "dual: c++ exceptions output, measured" test "$(AMEBA_ORACLE=$tmp/eh.json ./eh)" = "$(./eh_native)"
else
  check "one path: no __ameba_path" sh -c "! nm a.o | grep -q __ameba_path"
fi

# 7. the wrapper's own errors
"$ameba" cc --compiler "$cc" -static a.c -o st 2> err.txt; rc=$?
check "-static refused (status 2)" test "$rc" = 2
check "-static message" grep -q "static is not supported" err.txt
"$ameba" cc --compiler no-such-cc a.c -o nope 2> err.txt; rc=$?
check "missing compiler (status 127)" test "$rc" = 127
check "missing compiler message" grep -q "cannot run compiler 'no-such-cc'" err.txt
"$ameba" cc --compiler 2> err.txt; rc=$?
check "--compiler without value" test "$rc" = 2
# gcc: a runtime directory without the shim's start-up object is refused
# (gcc's own one would link a program that runs unmonitored)
if [ "$cc" = gcc ]; then
  mkdir -p nopreinit && cp -r "$libdir/." nopreinit/ && rm -f nopreinit/gcc-shim/libtsan_preinit.o
  AMEBA_LIBDIR="$tmp/nopreinit" "$ameba" cc --compiler gcc a.o b.o -o nopre 2> err.txt; rc=$?
  check "shim start-up missing (status 2)" test "$rc" = 2
  check "shim start-up message" grep -q "gcc-shim/libtsan_preinit.o is missing" err.txt
  check "shim start-up: nothing linked" test ! -e nopre
fi
# a compile error passes the compiler's status through
echo 'int main(void) { return undeclared; }' > broken.c
"$ameba" cc --compiler "$cc" broken.c -o broken 2> /dev/null; rc=$?
check "compiler failure passes through" test "$rc" -ne 0

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
