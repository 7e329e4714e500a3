#!/usr/bin/env bash
# Builds `localhost/deno-standin:<version>`: the official Deno image's layout (deno at
# /usr/bin/deno, user deno 1993, DENO_DIR=/deno-dir) made from the Deno that npm installed
# here, its shared libraries and busybox. The build machines reach package registries only,
# never a container registry, so this stands in for docker.io/denoland/deno in tests.
set -euo pipefail
version="$1"
image="localhost/deno-standin:${version}"
if podman image exists "$image"; then exit 0; fi
deno_bin="$(readlink -f "$(command -v deno)")"
"$deno_bin" --version | grep -q "^deno ${version} " || {
  echo "deno on PATH is not ${version}" >&2
  exit 1
}
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,usr/bin,etc/ssl/certs,tmp,deno-dir,home/deno}
chmod 1777 "$root/tmp"
cp "$(command -v busybox)" "$root/bin/busybox"
for applet in sh ls cat mkdir rm id env; do ln -s busybox "$root/bin/$applet"; done
cp "$deno_bin" "$root/usr/bin/deno"
# The loader and every library deno links against, at the paths ldd reports.
ldd "$deno_bin" | grep -oE '/[^ ]+' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true
printf 'root:x:0:0:root:/root:/bin/sh\ndeno:x:1993:1993:deno:/home/deno:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\ndeno:x:1993:\n' >"$root/etc/group"
tar -C "$root" -c . | podman import \
  --change 'ENV DENO_DIR=/deno-dir' \
  --change 'ENTRYPOINT ["/usr/bin/deno"]' - "$image" >/dev/null
echo "built $image" >&2
