#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)
# and kwok from their Go modules into cluster/bin/.
#
# Everything Go downloads or compiles lives in one cache directory keyed by the pinned versions
# (ADR 0014), so a second run only links the finished binaries.
#
#   cluster/build.sh            build with the committed go.mod/go.sum (what CI runs)
#   cluster/build.sh --update   let go add missing go.sum entries (after a version bump)
#   cluster/build.sh --e2e      also upstream's e2e test binary, e2e.test (cluster/go/e2e), for
#                               the conformance stage; cached in the same directory
#   cluster/build.sh --kruise   also OpenKruise's e2e test binary, kruise-e2e.test, from the Kruise
#                               module cluster/go/kruise-e2e pins, for the kruise-e2e stage; cached
#                               in the same directory under a marker naming the Kruise version
#
# Environment: EDGEROLL_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/edgeroll).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
control_plane_mod="${here}/go/control-plane"
kwok_mod="${here}/go/kwok"
bin_out="${here}/bin"

mod_mode=readonly
with_e2e=false
with_kruise=false
for arg in "$@"; do
  case "$arg" in
    --update) mod_mode=mod ;;
    --e2e) with_e2e=true ;;
    --kruise) with_kruise=true ;;
    *)
      echo "usage: cluster/build.sh [--update] [--e2e] [--kruise]" >&2
      exit 2
      ;;
  esac
done
e2e_mod="${here}/go/e2e"
kruise_mod="${here}/go/kruise-e2e"

log() { printf '[cluster-build %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# The version a go.mod requires, e.g. `required k8s.io/kubernetes go/control-plane/go.mod`.
required() {
  local version
  version="$(awk -v m="$1" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m && $2 ~ /^v/ { print $2; exit }' "$2")"
  if [ -z "$version" ]; then
    echo "cluster/build.sh: $2 does not require $1" >&2
    exit 1
  fi
  printf '%s' "$version"
}

k8s_version="$(required k8s.io/kubernetes "${control_plane_mod}/go.mod")"
etcd_version="$(required go.etcd.io/etcd/server/v3 "${control_plane_mod}/go.mod")"
kwok_version="$(required sigs.k8s.io/kwok "${kwok_mod}/go.mod")"
kruise_version="$(required github.com/openkruise/kruise "${kruise_mod}/go.mod")"
go_version="$(go env GOVERSION)"
key="k8s-${k8s_version}-etcd-${etcd_version}-kwok-${kwok_version}-${go_version}"
cache="${EDGEROLL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeroll}/cluster-${key}"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
# kwok reads its stages as Stage objects (ADR 0018): the pinned module's own CRD defines them.
stage_crd="kwok-stage-crd.yaml"
stage_crd_in_module="${cache}/mod/sigs.k8s.io/kwok@${kwok_version}/kustomize/crd/bases/kwok.x-k8s.io_stages.yaml"

link_binaries() {
  mkdir -p "$bin_out"
  # Builds cached before the CRD was needed have it only in their module cache.
  if [ ! -f "${cache}/bin/${stage_crd}" ]; then
    install -m 0644 "$stage_crd_in_module" "${cache}/bin/${stage_crd}"
  fi
  for b in "${binaries[@]}" "$stage_crd"; do
    # A hard link costs no space; fall back to a copy across file systems.
    ln -f "${cache}/bin/${b}" "${bin_out}/${b}" 2>/dev/null || cp -f "${cache}/bin/${b}" "${bin_out}/${b}"
  done
  printf '%s\n' "$key" >"${bin_out}/VERSIONS"
}

# Progress for long go commands: counts the lines that report one unit of work (`go build -v`
# prints one package path per line, `go mod download -x` one `# get ...: 200 OK` per file) and
# passes every other line, such as compiler errors, through.
progress() { # progress WHAT UNIT-REGEX NOISE-REGEX
  awk -v what="$1" -v unit="$2" -v noise="$3" '
    $0 ~ unit { n++; if (n % 50 == 0) { printf "[cluster-build] %s: %d\n", what, n; fflush() }; next }
    $0 ~ noise { next }
    { print; fflush() }
    END { printf "[cluster-build] %s: %d\n", what, n }' >&2
}

# Upstream's e2e.test, from the same k8s.io/kubernetes module and the same caches: most of
# its packages are compiled already by the control plane's build (same tags, same caches).
build_e2e() {
  if [ "$with_e2e" != true ]; then return 0; fi
  if [ "$mod_mode" != readonly ] || [ ! -f "${cache}/bin/.e2e-complete" ]; then
    local t=$SECONDS
    log "building e2e.test (k8s.io/kubernetes/test/e2e)"
    (cd "$e2e_mod" && go mod download -x 2>&1) | progress "files fetched for e2e" '^# get .*: 200 ' '^# get '
    (cd "$e2e_mod" && go test -c -v -tags=selinux,notest -ldflags "-s -w" -o "${cache}/bin/e2e.test" \
      k8s.io/kubernetes/test/e2e 2>&1) | progress "e2e.test packages compiled" '^[^ :]+$' '^$'
    touch "${cache}/bin/.e2e-complete"
    log "built e2e.test in $((SECONDS - t))s"
  fi
  ln -f "${cache}/bin/e2e.test" "${bin_out}/e2e.test" 2>/dev/null || cp -f "${cache}/bin/e2e.test" "${bin_out}/e2e.test"
}

# OpenKruise's e2e.test (kruise-e2e.test), for the kruise-e2e stage: test/e2e of the Kruise module
# at the version cluster/go/kruise-e2e/go.mod requires, compiled inside a copy of that module with
# its own go.mod and go.sum, unmodified (a wrapper module like cluster/go/e2e would drop Kruise's
# replace directives). Same module and build caches as the rest; the marker names the Kruise
# version, so a bump rebuilds.
kruise_src=""
build_kruise_e2e() {
  if [ "$with_kruise" != true ]; then return 0; fi
  local marker="${cache}/bin/.kruise-e2e-${kruise_version}-complete"
  if [ "$mod_mode" != readonly ] || [ ! -f "$marker" ]; then
    local t=$SECONDS module="github.com/openkruise/kruise@${kruise_version}" json dir
    rm -f "${cache}/bin/".kruise-e2e-*-complete
    # `go mod download M@V` checks the zip against go.sum but accepts (and records) a hash it
    # lacks, so in readonly mode a missing line is an error here, as it is for the other modules.
    if [ "$mod_mode" = readonly ] &&
      ! grep -q "^github.com/openkruise/kruise ${kruise_version} h1:" "${kruise_mod}/go.sum"; then
      echo "cluster/build.sh: ${kruise_mod}/go.sum has no hash for ${module}:" \
        "run cluster/build.sh --update --kruise" >&2
      exit 1
    fi
    log "downloading ${module}"
    if ! json="$(cd "$kruise_mod" && go mod download -json "$module")"; then
      printf '%s\n' "$json" >&2
      echo "cluster/build.sh: could not download ${module}" >&2
      exit 1
    fi
    dir="$(sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p' <<<"$json")"
    if [ ! -f "${dir}/go.mod" ]; then
      echo "cluster/build.sh: go mod download named no module directory for ${module}" >&2
      exit 1
    fi
    # Built in a writable copy of its own, as by hand: the module cache's tree stays read-only and
    # untouched, and two builds at once do not share one.
    kruise_src="$(mktemp -d "${cache}/kruise-src.XXXXXX")"
    trap 'rm -rf "$kruise_src"' EXIT
    cp -R "$dir" "${kruise_src}/kruise"
    chmod -R u+w "${kruise_src}/kruise"
    log "building kruise-e2e.test (${module}/test/e2e)"
    (
      cd "${kruise_src}/kruise"
      # -mod=readonly even with --update: Kruise's go.mod and go.sum are never rewritten.
      export GOFLAGS="-mod=readonly -buildvcs=false -trimpath"
      # Only the modules test/e2e needs, checked against Kruise's go.sum (go prints one
      # `go: downloading` line per module).
      go list -deps -test ./test/e2e 2>&1 >/dev/null |
        progress "modules fetched for kruise-e2e" '^go: downloading ' '^$'
      # `go test -c` names no package it compiles (its -v is the test binary's): `go build -v`
      # compiles them first, one line each, and the link below finds them in the build cache.
      go list -deps -test -f '{{if not .ForTest}}{{if ne .Name "main"}}{{.ImportPath}}{{end}}{{end}}' \
        ./test/e2e >"${kruise_src}/packages"
      xargs go build -v <"${kruise_src}/packages" 2>&1 |
        progress "kruise-e2e.test packages compiled" '^[^ :]+$' '^$'
      go test -c -ldflags "-s -w" -o "${kruise_src}/kruise-e2e.test" ./test/e2e
    )
    mv -f "${kruise_src}/kruise-e2e.test" "${cache}/bin/kruise-e2e.test"
    rm -rf "$kruise_src"
    touch "$marker"
    log "built kruise-e2e.test in $((SECONDS - t))s"
  fi
  ln -f "${cache}/bin/kruise-e2e.test" "${bin_out}/kruise-e2e.test" 2>/dev/null ||
    cp -f "${cache}/bin/kruise-e2e.test" "${bin_out}/kruise-e2e.test"
}

if [ "$mod_mode" = readonly ] && [ -f "${cache}/bin/.complete" ]; then
  link_binaries
  log "cached build ${key}: linked ${binaries[*]} ${stage_crd} into cluster/bin"
  if [ "$with_e2e" = true ] || [ "$with_kruise" = true ]; then
    export GOMODCACHE="${cache}/mod" GOCACHE="${cache}/build" GOTOOLCHAIN=local CGO_ENABLED=0
    export GOSUMDB=off GOFLAGS="-mod=${mod_mode} -buildvcs=false -trimpath"
    build_e2e
    build_kruise_e2e
  fi
  exit 0
fi

export GOMODCACHE="${cache}/mod"
export GOCACHE="${cache}/build"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
# The committed go.sum files pin every module hash, so the checksum database (often unreachable
# on the build machines) is never needed; a module missing from go.sum is an error in readonly mode.
export GOSUMDB=off
export GOFLAGS="-mod=${mod_mode} -buildvcs=false -trimpath"
mkdir -p "${cache}/bin"
log "cache ${cache}"

started=$SECONDS
for mod in "$control_plane_mod" "$kwok_mod"; do
  log "downloading modules for ${mod#"${here}/"}"
  (cd "$mod" && go mod download -x 2>&1) | progress "files fetched for ${mod##*/}" '^# get .*: 200 ' '^# get '
done
log "modules ready after $((SECONDS - started))s"

# Version stamps as upstream release builds set them: kubectl picks its client from /version.
build_date="$(sed -nE 's/.*"Time":"([^"]+)".*/\1/p' "${GOMODCACHE}/cache/download/k8s.io/kubernetes/@v/${k8s_version}.info")"
minor="${k8s_version#v*.}"
minor="${minor%%.*}"
k8s_stamps=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_stamps+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
  k8s_stamps+=" -X ${pkg}.gitTreeState=archive -X ${pkg}.buildDate=${build_date}"
done

build() { # build WHAT MODULE_DIR OUTPUT PACKAGE LDFLAGS
  local what="$1" dir="$2" out="$3" pkg="$4" ldflags="$5" t=$SECONDS
  log "building ${what}"
  (cd "$dir" && go build -v -tags=selinux,notest -ldflags "-s -w ${ldflags}" -o "$out" "$pkg" 2>&1) |
    progress "${what} packages compiled" '^[^ :]+$' '^$'

  log "built ${what} in $((SECONDS - t))s"
}

build etcd "$control_plane_mod" "${cache}/bin/etcd" go.etcd.io/etcd/server/v3 ""
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  build "$cmd" "$control_plane_mod" "${cache}/bin/${cmd}" "k8s.io/kubernetes/cmd/${cmd}" "$k8s_stamps"
done
build kwok "$kwok_mod" "${cache}/bin/kwok" sigs.k8s.io/kwok/cmd/kwok \
  "-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${k8s_version}"

touch "${cache}/bin/.complete"
link_binaries
build_e2e
build_kruise_e2e
log "build ${key} done in $((SECONDS - started))s"
