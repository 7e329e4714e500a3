#!/usr/bin/env bash
# Prometheus from Debian's package, unpacked (not installed: no service, no user, no unit) under
# ~/.cache/edgeroll keyed by the package's version; prints the path of its binary. The analysis
# scenarios (ADR 0055) start it on loopback themselves.
set -euo pipefail
# The upstream release the scenarios are written against; Debian's revision may move (a security
# update), the release may not.
upstream="2.42.0"
cache="${EDGEROLL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeroll}"
for found in "${cache}"/prometheus-"${upstream}"+*; do
  if [ -x "${found}/usr/bin/prometheus" ]; then
    echo "${found}/usr/bin/prometheus"
    exit 0
  fi
done
candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ { print $2 }'; }
version="$(candidate)"
if [ -z "${version}" ] || [ "${version}" = "(none)" ]; then
  echo "prometheus is not in apt's lists: apt-get update" >&2
  apt-get update -qq >&2
  version="$(candidate)"
fi
case "${version}" in
  "${upstream}"+*) ;;
  *)
    echo "Debian offers prometheus ${version:-none}, not ${upstream}: tests/prometheus/install.sh pins ${upstream}" >&2
    exit 1
    ;;
esac
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
# apt downloads as its own user (_apt): the directory is written by it.
chmod 777 "${work}"
echo "downloading Debian's prometheus ${version} into ${cache}" >&2
(cd "${work}" && apt-get download -qq "prometheus=${version}" >&2)
dest="${cache}/prometheus-${version}"
mkdir -p "${work}/unpacked"
dpkg-deb -x "${work}"/prometheus_*.deb "${work}/unpacked"
mkdir -p "${cache}"
rm -rf "${dest}"
mv "${work}/unpacked" "${dest}"
"${dest}/usr/bin/prometheus" --version >&2
echo "${dest}/usr/bin/prometheus"
