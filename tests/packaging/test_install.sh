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
pass=0; fail=0
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
  echo "skip: the wheel is not installed and tested: python3 -m venv does not work here (apt-get install python3-venv)"
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
print("api ok")' "$fixture" >"$tmp/api" 2>&1
  has "$tmp/api" "^api ok$" "gpuwhy.report(path) as a dict"
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

# ---- the tarball, unpacked elsewhere --------------------------------------
if [ -n "${DIST:-}" ] && [ -f "$DIST" ]; then
  mkdir -p "$tmp/opt" && tar -C "$tmp/opt" -xzf "$DIST"
  d=$(echo "$tmp"/opt/gpuwhy-*)
  for f in bin/gpuwhy share/man/man1/gpuwhy.1 share/bash-completion/completions/gpuwhy \
      share/zsh/site-functions/_gpuwhy; do
    [ -f "$d/$f" ] && ok || ko "the tarball has no $f"
  done
  ls "$d"/lib/gpuwhy/libgpuwhy-inject-cu*.so >/dev/null 2>&1 && ok || ko "the tarball has no injection library"
  "$d/bin/gpuwhy" report "$fixture" >"$tmp/rep2" 2>&1
  has "$tmp/rep2" "C9" "gpuwhy report from the tarball"
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
fi
command -v zsh >/dev/null && { zsh -n "$root/completions/_gpuwhy" && ok || ko "zsh completion: syntax"; }

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
