#!/usr/bin/env bash
# tests/viz/test_browser.sh — the HTML viewer in a real browser: fxdb writes the pages of
# tests/viz/browser_pages.lua (seed case S1, the 32-layer Llama on meta tensors), headless
# Chromium loads each with tests/viz/browser_checks.js appended, which clicks nodes and module
# boxes and checks the side panel, the breadcrumb and the view shown; Chromium's --dump-dom
# returns the results. Screenshots of both pages (and of an opened layer) are left in
# BUILD/browser/ to be looked at.
# Layer: tests. Usage: tests/viz/test_browser.sh BUILD. Ends with "browser: N passed, N failed";
# without Chromium it says so and counts nothing (make deps installs Debian's chromium).
set -u
build=${1:?usage: tests/viz/test_browser.sh BUILD}
fxdb="$build/fxdb"
out="$build/browser"
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
    echo "browser: skipped: Chromium is not installed (make deps installs Debian's chromium)"
    echo "browser: 0 passed, 0 failed"
    exit 0
fi
rm -rf "$out"
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
passed=0
failed=0

if ! "$fxdb" tests/viz/browser_pages.lua "$out" >"$out/pages.log" 2>&1; then
    cat "$out/pages.log"
    echo "browser: 0 passed, 1 failed"
    exit 1
fi

chromium_run() {   # extra flags..., url
    timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size=1400,900 --virtual-time-budget=15000 "$@" \
        2>>"$out/chromium.log"
}

for page in seed llama32; do
    test_page="$out/$page.test.html"
    # the page as fxdb wrote it, plus the checks after the viewer's own script
    sed '$d' "$out/$page.html" >"$test_page"
    { echo "<script>window.FX_SCENARIO = '$page';</script><script>"
      cat tests/viz/browser_checks.js
      echo "</script></body></html>"; } >>"$test_page"
    chromium_run --dump-dom "file://$(realpath "$test_page")" >"$out/$page.dom.html"
    result=$(sed -n '/<pre id="fx-test-result">/,/DONE/p' "$out/$page.dom.html" | sed 's/<pre id="fx-test-result">//')
    if ! printf '%s\n' "$result" | grep -q '^DONE'; then
        echo "FAIL $page: the checks did not finish (see $out/$page.dom.html, $out/chromium.log)"
        failed=$((failed + 1))
        continue
    fi
    while IFS= read -r line; do
        case "$line" in
        PASS*) passed=$((passed + 1)); echo "$line" ;;
        FAIL*) failed=$((failed + 1)); echo "$line" ;;
        esac
    done <<<"$result"
done

# screenshots to look at: each page as opened, a layer opened, a node selected
shot() {   # name url
    chromium_run --screenshot="$out/$1.png" "$2" >/dev/null
    if [ -s "$out/$1.png" ]; then passed=$((passed + 1)); echo "PASS screenshot $1.png"
    else failed=$((failed + 1)); echo "FAIL screenshot $1.png not written"; fi
}
seed_url="file://$(realpath "$out/seed.html")"
llama_url="file://$(realpath "$out/llama32.html")"
shot seed "$seed_url"
shot seed-node "$seed_url#node=mul"
shot llama32 "$llama_url"
shot llama32-layer3 "$llama_url#view=layers.3"
echo "screenshots in $out/"
echo "browser: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
