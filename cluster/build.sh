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
#
# Environment: EDGEROLL_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/edgeroll).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
control_plane_mod="${here}/go/control-plane"
kwok_mod="${here}/go/kwok"
bin_out="${here}/bin"

mod_mode=readonly
with_e2e=false
for arg in "$@"; do
  case "$arg" in
    --update) mod_mode=mod ;;
    --e2e) with_e2e=true ;;
    *)
      echo "usage: cluster/build.sh [--update] [--e2e]" >&2
      exit 2
      ;;
  esac
done
e2e_mod="${here}/go/e2e"

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

if [ "$mod_mode" = readonly ] && [ -f "${cache}/bin/.complete" ]; then
  link_binaries
  log "cached build ${key}: linked ${binaries[*]} ${stage_crd} into cluster/bin"
  if [ "$with_e2e" = true ]; then
    export GOMODCACHE="${cache}/mod" GOCACHE="${cache}/build" GOTOOLCHAIN=local CGO_ENABLED=0
    export GOSUMDB=off GOFLAGS="-mod=${mod_mode} -buildvcs=false -trimpath"
    build_e2e
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
log "build ${key} done in $((SECONDS - started))s"
