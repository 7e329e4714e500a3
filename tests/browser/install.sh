#!/usr/bin/env bash
# What the browser test needs: Debian's Chromium (installed by .ci/run) and playwright-core from
# npm into ~/.cache/edgeroll, keyed by its version (no browser download: the system's is used).
# Prints the directory holding playwright-core's node_modules.
set -euo pipefail
version="1.64.1"
prefix="${HOME}/.cache/edgeroll/playwright-core-${version}"
if [ ! -x /usr/bin/chromium ]; then
  echo "Debian's chromium is required (/usr/bin/chromium): apt-get install chromium" >&2
  exit 1
fi
if [ ! -f "${prefix}/installed" ]; then
  echo "installing playwright-core ${version} from npm into ${prefix}" >&2
  rm -rf "${prefix}"
  mkdir -p "${prefix}"
  npm install --no-audit --no-fund --silent --prefix "${prefix}" "playwright-core@${version}" >&2
  touch "${prefix}/installed"
fi
echo "${prefix}"
