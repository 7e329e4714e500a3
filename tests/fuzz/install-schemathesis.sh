#!/usr/bin/env bash
# Installs schemathesis from PyPI into a virtualenv cached under ~/.cache/edgeroll, keyed by its
# version, and prints the path of its `st`. Python 3 comes with the machine (CPython, pip). The
# `installed` stamp is written last: an install cut short is done again.
set -euo pipefail
version="4.32.5"
prefix="${HOME}/.cache/edgeroll/schemathesis-${version}"
if [ ! -f "${prefix}/installed" ]; then
  command -v python3 >/dev/null || { echo "python3 is required to install schemathesis" >&2; exit 1; }
  echo "installing schemathesis ${version} from PyPI into ${prefix}" >&2
  rm -rf "${prefix}"
  python3 -m venv "${prefix}"
  "${prefix}/bin/pip" install --quiet --disable-pip-version-check "schemathesis==${version}" >&2
  touch "${prefix}/installed"
fi
echo "${prefix}/bin/st"
