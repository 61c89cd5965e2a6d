#!/usr/bin/env bash
# Build the console's code editor (CodeMirror 6) into static/vendor/editor.js from the pinned
# packages of package-lock.json, and collect their licences beside it. Needs node and npm; the
# result is committed (make run and CI never build it). tests/test_editor_bundle.py checks that the
# committed file is what this script builds.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund --silent
npx esbuild src/editor.js --bundle --minify --format=iife --target=es2020 --legal-comments=none \
  --outfile=../static/vendor/editor.js --log-level=warning
{
  echo "The console's code editor bundles these packages (editor/package-lock.json); their licences follow."
  for dir in node_modules/@codemirror/* node_modules/@lezer/* node_modules/codemirror node_modules/crelt \
             node_modules/style-mod node_modules/w3c-keyname node_modules/@marijn/*; do
    [ -f "$dir/package.json" ] || continue
    name=$(node -p "require('./$dir/package.json').name + ' ' + require('./$dir/package.json').version")
    echo; echo "== $name =="
    cat "$dir"/LICENSE* 2>/dev/null || echo "(licence: $(node -p "require('./$dir/package.json').license"))"
  done
} > ../static/vendor/editor.LICENSE.txt
