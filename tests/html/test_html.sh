#!/usr/bin/env bash
# The HTML pages in a real browser: the `report --html` page of every suite
# recording and of every second corpus job (not a job's further recordings,
# NAME.r2, NAME.r3, NAME.6s: the same job's pages) and `diff --html` pages, loaded by headless Chromium, one browser start for all
# (an index page frames every page and copies each one's DOM into its own once
# loaded), then tests/html/check_html.py checks the dumped DOM: no script
# error, the script ran to its end, one finding section per finding of the
# JSON report, one step bar per bin, lines in the GPU charts, escaping.
set -u
cd "$(dirname "$0")/../.."
GPUWHY=${GPUWHY:-./gpuwhy}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "skipped: chromium not installed (apt-get install chromium)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
if ! command -v python3 >/dev/null; then
  echo "skipped: python3 not installed"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
tmp=$(mktemp -d)
[ -n "${KEEP_TMP:-}" ] && echo "tmp: $tmp" || trap 'rm -rf "$tmp"' EXIT
fail=0
pages=()
k=0
for f in tests/fixtures/*.gwr tests/fixtures/corpus/*.gwr; do
  n=$(basename "$f" .gwr)
  case $n in *.r[0-9]|*.6s) continue ;; esac  # a job's further recordings: the same job's pages
  # every suite recording's page, and every second corpus job's: the same
  # page code over other data, and the browser's time grows with the corpus
  case $f in tests/fixtures/corpus/*) k=$((k + 1)); [ $((k % 2)) -eq 1 ] || continue ;; esac
  [ -e "$tmp/$n.html" ] && n="corpus_$n"
  made=${GW_RENDERED:+$GW_RENDERED/${f#tests/fixtures/}}; made=${made%.gwr}
  if [ -n "$made" ] && [ -f "$made.rc" ]; then  # tests/render_fixtures.sh made it
    rc=$(cat "$made.rc")
    cp "$made.err" "$tmp/$n.err"
    if [ -f "$made.html" ]; then cp "$made.html" "$tmp/$n.html"; fi
    if [ -f "$made.json" ]; then cp "$made.json" "$tmp/$n.json"; else : >"$tmp/$n.json"; fi
  else
    "$GPUWHY" report --html "$tmp/$n.html" --json "$f" >"$tmp/$n.json" 2>"$tmp/$n.err"
    rc=$?
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "FAIL report --html $f: exit $rc"; cat "$tmp/$n.err"; fail=$((fail + 1)); continue
  fi
  if [ -n "$made" ] && [ -f "$made.gpu" ]; then cp "$made.gpu" "$tmp/$n.gpu"
  else "$GPUWHY" dump --type gpu "$f" 2>/dev/null | head -1 >"$tmp/$n.gpu"; fi
  pages+=("$n")
done
# a job whose command line holds markup: recorded without a GPU (host side only)
if "$GPUWHY" record -o "$tmp/markup.gwr" -- sh -c 'true "<script>alert(1)</script>" "&amp;"' \
     >/dev/null 2>&1 || [ -s "$tmp/markup.gwr" ]; then
  if "$GPUWHY" report --html "$tmp/markup.html" --json "$tmp/markup.gwr" >"$tmp/markup.json" 2>/dev/null ||
     [ -s "$tmp/markup.html" ]; then
    : >"$tmp/markup.gpu"
    pages+=(markup)
  fi
fi
# the case study analysed in time windows (no steps)
if "$GPUWHY" report --steps none --html "$tmp/windows.html" --json tests/fixtures/case_study.gwr \
     >"$tmp/windows.json" 2>/dev/null; then
  "$GPUWHY" dump --type gpu tests/fixtures/case_study.gwr 2>/dev/null | head -1 >"$tmp/windows.gpu"
  pages+=(windows)
else
  echo "FAIL report --steps none --html"; fail=$((fail + 1))
fi
# diff pages: the case study against itself and against another run
diff_page() { # name [options] before after
  local n=$1; shift
  if "$GPUWHY" diff --json --html "$tmp/$n.html" "$@" >"$tmp/$n.json" 2>"$tmp/$n.err"; then
    pages+=("$n")
  else
    echo "FAIL diff --html $*"; cat "$tmp/$n.err"; fail=$((fail + 1))
  fi
}
diff_page diff_cs tests/fixtures/case_study.gwr tests/fixtures/case_study.gwr
diff_page diff_c4 tests/fixtures/case_study.gwr tests/fixtures/c4_launch_bound.gwr
diff_page diff_windows --steps none tests/fixtures/case_study.gwr tests/fixtures/healthy.gwr
{
  echo '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><div id="out"></div><script>'
  printf 'var pages = ['; for n in "${pages[@]}"; do printf '"%s",' "$n"; done; echo '];'
  cat <<'JS'
/* one page at a time: load it in a frame, copy its DOM here, go on */
var out = document.getElementById('out'), i = 0;
function next() {
  if (i == pages.length) { out.setAttribute('data-done', i); return; }
  var fr = document.createElement('iframe'), name = pages[i++];
  fr.onload = function () {
    var d = document.createElement('div');
    d.className = 'page';
    d.setAttribute('data-name', name);
    try { d.innerHTML = fr.contentDocument.body.innerHTML; }
    catch (e) { d.textContent = 'NO-ACCESS ' + e; }
    out.appendChild(d);
    fr.parentNode.removeChild(fr);
    next();
  };
  fr.src = name + '.html';
  document.body.appendChild(fr);
}
next();
</script></body></html>
JS
} >"$tmp/index.html"
timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox --allow-file-access-from-files \
  --virtual-time-budget=20000 --enable-logging=stderr --v=0 --user-data-dir="$tmp/profile" \
  --dump-dom "file://$tmp/index.html" >"$tmp/dom.html" 2>"$tmp/console.txt"
python3 tests/html/check_html.py "$tmp" "$tmp/dom.html" "$tmp/console.txt" "${pages[@]}"
rc=$?
if [ "$fail" -ne 0 ]; then
  echo "0 passed, $fail failed"
  exit 1
fi
exit $rc
