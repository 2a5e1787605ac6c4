#!/usr/bin/env bash
# What the documentation promises, checked against the binary: README's
# example report, the man page's options and examples, `gpuwhy help CMD`,
# NO_COLOR, where `make demo` leaves its recording. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
gw=${GPUWHY:-$PWD/gpuwhy}
tmp=$(mktemp -d /tmp/gw-docs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }

# excerpt_matches EXCERPT OUTPUT: every excerpt line equals the next output
# line (trailing blanks aside); a line of "..." alone stands for one or more
# output lines left out. Without a final "...", the output must end there too.
excerpt_matches() {
  local -a want have
  mapfile -t want < <(sed 's/[[:space:]]*$//' "$1")
  mapfile -t have < <(sed 's/[[:space:]]*$//' "$2")
  local i=0 j=0 skip=0
  while [ "$i" -lt "${#want[@]}" ]; do
    if [ "${want[$i]}" = "..." ]; then
      skip=1; i=$((i+1)); j=$((j+1)); continue
    fi
    if [ "$skip" -eq 1 ]; then
      while [ "$j" -lt "${#have[@]}" ] && [ "${have[$j]}" != "${want[$i]}" ]; do j=$((j+1)); done
      skip=0
    fi
    if [ "$j" -ge "${#have[@]}" ] || [ "${have[$j]}" != "${want[$i]}" ]; then
      echo "README line $((i+1)) '${want[$i]}' not in the report at line $((j+1)) ('${have[$j]:-end of output}')"
      return 1
    fi
    i=$((i+1)); j=$((j+1))
  done
  if [ "$skip" -eq 1 ]; then
    [ "$j" -le "${#have[@]}" ] || { echo "README's last '...' stands for no line"; return 1; }
  elif [ "$j" -ne "${#have[@]}" ]; then
    echo "the report goes on after README's last line: '${have[$j]}' (end the excerpt with '...')"
    return 1
  fi
  return 0
}

# The matcher itself: it must fail on a changed number, a line out of order
# and a line left out without a marker.
printf 'a\nb 1\nc\nd\n' > "$tmp/have"
printf 'a\n...\nc\n...\n' > "$tmp/w1"; excerpt_matches "$tmp/w1" "$tmp/have" >/dev/null && ok || ko "matcher: '...' elisions"
printf 'a\nb 2\n...\n' > "$tmp/w2"; excerpt_matches "$tmp/w2" "$tmp/have" >/dev/null && ko "matcher: a changed number passed" || ok
printf 'a\nc\nd\n' > "$tmp/w3"; excerpt_matches "$tmp/w3" "$tmp/have" >/dev/null && ko "matcher: a line left out without '...' passed" || ok
printf 'a\n...\nd\nc\n' > "$tmp/w4"; excerpt_matches "$tmp/w4" "$tmp/have" >/dev/null && ko "matcher: lines out of order passed" || ok

# README's example: the first ``` block after "2. Read the report." starts
# with "$ gpuwhy ARGS"; the rest is that command's output (--color never).
awk '/^\*\*2\. Read the report\.\*\*/ { on = 1 } on && /^```/ { if (inb) exit; inb = 1; next } inb { print }' \
  README.md > "$tmp/readme"
cmdline=$(head -1 "$tmp/readme")
case $cmdline in
  '$ gpuwhy '*) ok ;;
  *) ko "README's example does not start with '\$ gpuwhy ...': '$cmdline'" ;;
esac
tail -n +2 "$tmp/readme" > "$tmp/excerpt"
[ "$(grep -cv '^\.\.\.$' "$tmp/excerpt")" -ge 10 ] && ok || ko "README's example has under 10 lines of output"
read -r -a args <<< "${cmdline#\$ gpuwhy }"
LC_ALL=C.UTF-8 "$gw" "${args[@]}" --color never > "$tmp/report" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && ok || ko "README's command exits $rc: $(head -c 300 "$tmp/err")"
if msg=$(excerpt_matches "$tmp/excerpt" "$tmp/report"); then ok; else ko "README's example report: $msg"; fi

# The man page names every option of every command's --help (the long form
# in the page, the long or short form in the SYNOPSIS), and has examples.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' docs/gpuwhy.1 > "$tmp/man"
awk '/^\.SH SYNOPSIS/ { on = 1; next } /^\.SH/ { on = 0 } on' "$tmp/man" > "$tmp/synopsis"
has_opt() { grep -qE -- "(^|[^A-Za-z-])$1([^A-Za-z-]|\$)" "$2"; }
# the commands gpuwhy --help lists
cmds=$("$gw" --help | awk '/^commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 6 ] && ok || ko "gpuwhy --help lists under 6 commands: $cmds"
for c in $cmds; do
  "$gw" "$c" --help | grep -oE '^ +(-[A-Za-z], )?--[a-z][a-z-]*' > "$tmp/opts"
  [ -s "$tmp/opts" ] || ko "$c --help lists no options"
  while read -r a b; do
    short=; long=$a
    [ -n "$b" ] && { short=${a%,}; long=$b; }
    has_opt "$long" "$tmp/man" && ok || ko "docs/gpuwhy.1 lacks $c's $long"
    [ "$long" = --help ] && continue
    { has_opt "$long" "$tmp/synopsis" || { [ -n "$short" ] && has_opt "$short" "$tmp/synopsis"; }; } &&
      ok || ko "docs/gpuwhy.1's SYNOPSIS lacks $c's $long"
  done < "$tmp/opts"
  grep -q "^\.B gpuwhy $c" "$tmp/synopsis" && ok || ko "docs/gpuwhy.1's SYNOPSIS lacks gpuwhy $c"
done
# Option spellings agree: where the man page, README or docs/*.md show an
# option with a placeholder (--batch N[:M], --top N), it is the placeholder
# of the option's --help line; an option shown so that no --help lists fails.
for c in $cmds; do "$gw" "$c" --help; done > "$tmp/allhelp"
python3 - "$tmp/allhelp" "$tmp/man" README.md docs/*.md > "$tmp/spell" <<'PY'
import re, sys
PH = r"[A-Z][A-Za-z0-9_:/\[\]=]*(?![.][A-Za-z0-9])"
def clean(tok):
    tok = tok.rstrip(".,;:)|`")
    while tok.count("]") > tok.count("["):  # "[--batch N[:M]]": the synopsis's own bracket
        tok = tok[:-1]
    return tok
helps = {}
for line in open(sys.argv[1]):
    m = re.match(r"^ +(?:-[A-Za-z], )?(--[a-z][a-z-]*)(?: (" + PH + r")(?: |$))?", line.rstrip("\n"))
    if m:
        helps.setdefault(m.group(1), set()).add(m.group(2) or "")
n = 0
for path in sys.argv[2:]:
    text = open(path).read()
    spans = [text] if path.endswith("man") else re.findall(r"`([^`\n]+)`", text)
    for span in spans:
        for m in re.finditer(r"(?<![A-Za-z-])(--[a-z][a-z-]*) (" + PH + r")", span):
            opt, tok = m.group(1), clean(m.group(2))
            n += 1
            shown = "docs/gpuwhy.1" if path.endswith("man") else path
            if opt not in helps:
                print("FAIL %s shows %s %s, but no command's --help lists %s" % (shown, opt, tok, opt))
            elif tok not in helps[opt]:
                print("FAIL %s spells %s %s; --help spells it %s" % (shown, opt, tok,
                      " or ".join(sorted(h or "(no argument)" for h in helps[opt]))))
print("checked", n)
PY
grep '^FAIL' "$tmp/spell" | sed 's/^FAIL //' | while read -r l; do echo "FAIL $l"; done
nbad=$(grep -c '^FAIL' "$tmp/spell")
[ "$nbad" -eq 0 ] && ok || fail=$((fail + nbad))
[ "$(awk '/^checked/ {print $2}' "$tmp/spell")" -ge 20 ] && ok || ko "option spellings: only $(cat "$tmp/spell" | tail -1) (the pattern is broken)"
grep -q '^\.SH EXAMPLES' docs/gpuwhy.1 && ok || ko "docs/gpuwhy.1 has no EXAMPLES section"
# every example runs a command that exists
awk '/^\.SH EXAMPLES/ { on = 1; next } /^\.SH/ { on = 0 } on && /^gpuwhy / { print $2 }' "$tmp/man" | sort -u > "$tmp/excmds"
[ "$(wc -l < "$tmp/excmds")" -ge 4 ] && ok || ko "docs/gpuwhy.1's EXAMPLES show under 4 commands"
while read -r c; do
  "$gw" "$c" --help >/dev/null 2>&1 && ok || ko "docs/gpuwhy.1's example command '$c' does not exist"
done < "$tmp/excmds"

# docs/DESIGN.md, the map of the code: every path it names in backquotes
# (files and folders) exists, and every function, table or macro it names
# so (`name()`, `name[]`, `NAME`) is in the source.
grep -ohE '`(src|tests|inject|docs|bench)/[A-Za-z0-9_./-]*`' docs/DESIGN.md | tr -d '`' | sort -u > "$tmp/design"
[ "$(wc -l < "$tmp/design")" -ge 30 ] && ok || ko "docs/DESIGN.md names under 30 paths: the pattern is broken"
while read -r f; do [ -e "$f" ] && ok || ko "docs/DESIGN.md names $f, which does not exist"; done < "$tmp/design"
grep -ohE '`[A-Za-z_][A-Za-z0-9_]*(\(\)|\[\])?`' docs/DESIGN.md | tr -d '`' | sed 's/[][()]//g' |
  grep -E '^[a-z_][a-z0-9_]*_[a-z0-9_]+$|^[A-Z][A-Z0-9]*_[A-Z0-9_]+$' | sort -u > "$tmp/design_ids"
[ "$(wc -l < "$tmp/design_ids")" -ge 10 ] && ok || ko "docs/DESIGN.md names under 10 identifiers: the pattern is broken"
while read -r id; do
  grep -rqw -- "$id" src inject && ok || ko "docs/DESIGN.md names $id, which is nowhere in src/ or inject/"
done < "$tmp/design_ids"

# Every file the documentation names exists: the committed command behind
# each figure, its results file, its log (bench/RESULTS.md's "results/X" is
# bench/results/X; tests/gpu/RESULTS.md's bare logs are in docs/gpu-runs/).
git ls-files '*.md' docs/gpuwhy.1 2>/dev/null > "$tmp/docfiles"
if [ -s "$tmp/docfiles" ]; then
  { xargs grep -ohE '\b(bench|tests|docs|workloads|src|inject)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(sh|py|jsonl|log|tsv|c|h|md|txt|json|gwr|cu)\b' < "$tmp/docfiles"
    grep -ohE '`results/[a-z0-9_.-]+`' bench/RESULTS.md | tr -d '`' | sed 's|^|bench/|'
    grep -ohE '`[a-z0-9_-]+\.(log|txt)`' tests/gpu/RESULTS.md | tr -d '`' | sed 's|^|docs/gpu-runs/|'
  } | sort -u > "$tmp/named"
  [ "$(wc -l < "$tmp/named")" -ge 50 ] && ok || ko "the docs name under 50 files: the pattern is broken"
  while read -r f; do [ -e "$f" ] && ok || ko "the documentation names $f, which does not exist"; done < "$tmp/named"
else
  echo "skip the files the docs name: not a git checkout"; skip=$((skip+1))
fi

# The repository stands alone: no tracked file cites a path outside it (the
# steering folders beside the checkout, ../ out of the tree, absolute paths
# of this machine), and every document the docs name (X.md, X.txt in a .md
# file or the man page) is in the repository, beside the file that names it
# or from the root (tests/gpu/RESULTS.md's logs: in docs/gpu-runs/), and so
# is every X.md a source file names. Logs kept
# as they came out (docs/gpu-runs/, bench/results/) are not citations.
if git ls-files >/dev/null 2>&1; then
  git ls-files | grep -vE '^(tests/(fixtures|fuzz/regressions)|docs/gpu-runs|bench/results)/|^tests/cli/test_docs\.sh$|\.(png|gwr|gz|whl)$' > "$tmp/tracked"
  python3 - "$tmp/tracked" > "$tmp/cites" <<'PY'
import os, re, sys
root = os.getcwd()
outside = re.compile(r"(?<![\w$./-])((?:\.\./)*(?:shared|seed)/[\w./-]+|/work/[\w./-]*|(?:\.\./)+[\w./-]+\.(?:md|txt|json|pdf|html))")
# (not a dotted module path: ase.md.Langevin)
docname = re.compile(r"(?<![\w$./{}-])([\w.-]+(?:/[\w.-]+)*\.(?:md|txt))\b(?!\.\w)")
others = {"Objects/locations.md"}  # CPython's, named as such (src/pystack)
n = 0
for path in open(sys.argv[1]).read().split("\n"):
    if not path or not os.path.isfile(path):
        continue
    try:
        text = open(path, encoding="utf-8").read()
    except UnicodeDecodeError:
        continue
    here = os.path.dirname(path)
    is_doc = path.endswith(".md") or path == "docs/gpuwhy.1"
    for no, line in enumerate(text.split("\n"), 1):
        for m in outside.finditer(line):
            c = m.group(1)
            inside = os.path.realpath(os.path.join(root, here, c)).startswith(root + "/")
            if c.startswith(("shared/", "seed/", "/work/")) or not inside or re.search(r"\.\./(shared|seed)/", c):
                print("FAIL %s:%d cites %s, outside the repository" % (path, no, c))
        for m in docname.finditer(line):
            c = m.group(1)
            if not is_doc and (not c.endswith(".md") or c in others):
                continue  # a script's own .txt files; another project's documents
            n += 1
            where = [os.path.join(here, c), c, os.path.join("docs", c)]
            if path == "tests/gpu/RESULTS.md":
                where.append(os.path.join("docs/gpu-runs", c))
            if not any(os.path.exists(w) for w in where):
                print("FAIL %s:%d names %s, which is not in the repository" % (path, no, c))
print("checked", n)
PY
  grep '^FAIL' "$tmp/cites"
  nbad=$(grep -c '^FAIL' "$tmp/cites")
  [ "$nbad" -eq 0 ] && ok || fail=$((fail + nbad))
  [ "$(awk '/^checked/ {print $2}' "$tmp/cites")" -ge 50 ] && ok || ko "document names: $(tail -1 "$tmp/cites") (the pattern is broken)"
else
  echo "skip citations outside the repository: not a git checkout"; skip=$((skip+1))
fi

# gpuwhy help CMD prints CMD's help, for every command
for c in $cmds; do
  "$gw" help "$c" > "$tmp/out" 2>&1; rc=$?
  [ $rc -eq 0 ] && ok || ko "gpuwhy help $c exits $rc"
  head -1 "$tmp/out" | grep -q "^usage: gpuwhy $c" && ok || ko "gpuwhy help $c: $(head -1 "$tmp/out")"
done
"$gw" help > "$tmp/out" 2>&1 && grep -q '^commands:' "$tmp/out" && ok || ko "gpuwhy help lists the commands"
"$gw" help frobnicate > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown command 'frobnicate'" "$tmp/out" && ok || ko "gpuwhy help frobnicate: exit $rc, $(head -c 200 "$tmp/out")"

# One error style everywhere: getopt's complaints too start "gpuwhy: error:",
# for every command, then say where the options are listed (exit 2)
for c in $cmds; do
  for bad in --no-such-option -Z; do
    "$gw" "$c" "$bad" > "$tmp/out" 2> "$tmp/err"; rc=$?
    first=$(head -1 "$tmp/err")
    case $first in
      "gpuwhy: error: "*"option"*) ok ;;
      *) ko "gpuwhy $c $bad: '$first' (want 'gpuwhy: error: ...')" ;;
    esac
    [ $rc -eq 2 ] && grep -q "'gpuwhy $c --help' lists the options" "$tmp/err" && ok || ko "gpuwhy $c $bad: exit $rc, $(cat "$tmp/err")"
  done
done
"$gw" diff --batch > "$tmp/out" 2> "$tmp/err"
case $(head -1 "$tmp/err") in "gpuwhy: error: option '--batch' needs a value") ok ;;
  *) ko "gpuwhy diff --batch: $(head -1 "$tmp/err")" ;; esac

# Colour: on a terminal (script(1) gives one) the report, the diff and the
# checks are coloured; NO_COLOR set and non-empty turns it off (empty is as
# if unset: no-color.org), and so do TERM=dumb, no TERM, and a pipe.
if command -v script >/dev/null; then
  esc=$(printf '\033')
  fx=tests/fixtures/case_study.gwr
  for c in "report $fx" "diff $fx tests/fixtures/case_study.fix.gwr" "check --no-bandwidth"; do
    on_tty() { # output file, env assignments...: CMD on a terminal
      local out=$1; shift
      env -u NO_COLOR -u TERM "$@" script -qec "'$gw' $c" /dev/null > "$out" 2>&1
    }
    on_tty "$tmp/c0" TERM=xterm; grep -q "$esc\[" "$tmp/c0" && ok || ko "$c on a terminal is not coloured"
    on_tty "$tmp/c1" TERM=xterm NO_COLOR=; grep -q "$esc\[" "$tmp/c1" && ok || ko "$c: NO_COLOR= (empty) turned colour off"
    on_tty "$tmp/c2" TERM=xterm NO_COLOR=1; grep -q "$esc\[" "$tmp/c2" && ko "$c: NO_COLOR=1 left colour on" || ok
    on_tty "$tmp/c3" TERM=dumb; grep -q "$esc\[" "$tmp/c3" && ko "$c: TERM=dumb left colour on" || ok
    on_tty "$tmp/c4"; grep -q "$esc\[" "$tmp/c4" && ko "$c: colour without TERM" || ok
    # shellcheck disable=SC2086
    TERM=xterm "$gw" $c 2>&1 | grep -q "$esc\[" && ko "$c: colour into a pipe" || ok
  done
else
  echo "skip colour on a terminal: no script(1)"; skip=$((skip+1))
fi

# make demo on a GPU machine (stand-ins for nvidia-smi and python3 on PATH)
# leaves its recording in the build folder, not in the repository root.
mkdir -p "$tmp/bin" "$tmp/build"
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/nvidia-smi"
printf '#!/bin/sh\necho "stand-in python3 $*"\nexit 0\n' > "$tmp/bin/python3"
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/python3"
ls "$root"/*.gwr > "$tmp/root_before" 2>/dev/null
PATH=$tmp/bin:$PATH make -s -o all -C "$root" demo BUILD="$tmp/build" GPUWHY="$gw" > "$tmp/demo" 2>&1
grep -q "GPU found" "$tmp/demo" && ok || ko "make demo did not take the GPU branch: $(head -c 300 "$tmp/demo")"
ls "$tmp"/build/gpuwhy-demo-*.gwr >/dev/null 2>&1 && ok || ko "make demo left no recording in BUILD ($(ls "$tmp/build"))"
ls "$root"/*.gwr > "$tmp/root_after" 2>/dev/null
if cmp -s "$tmp/root_before" "$tmp/root_after"; then ok; else
  ko "make demo left $(comm -13 "$tmp/root_before" "$tmp/root_after") in the repository root"
  comm -13 "$tmp/root_before" "$tmp/root_after" | while read -r f; do case $f in */gpuwhy-demo-*.gwr) rm -f -- "$f" ;; esac; done
fi

echo "$pass passed, $fail failed${skip:+, $skip skipped}"
[ "$fail" -eq 0 ]
