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
#   cluster/build.sh --helm     also Helm, from the module cluster/go/helm pins, for the chart
#                               stage (charts/edgeroll); cached in the same directory
#   cluster/build.sh --kruise-manager
#                               also OpenKruise's kruise-manager, from the same Kruise module, with
#                               the CRDs and webhook configurations of that module in
#                               cluster/bin/kruise-config (cluster/kruise-manager.ts, ADR 0030)
#   cluster/build.sh --kruise-rollout
#                               also Kruise Rollout's manager and e2e test binary, from the module
#                               cluster/go/kruise-rollout pins, with its CRDs, webhook configurations
#                               and test data in cluster/bin/kruise-rollout-config (issue 37)
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
with_kruise_manager=false
with_kruise_rollout=false
with_helm=false
for arg in "$@"; do
  case "$arg" in
    --update) mod_mode=mod ;;
    --e2e) with_e2e=true ;;
    --kruise) with_kruise=true ;;
    --kruise-manager) with_kruise_manager=true ;;
    --kruise-rollout) with_kruise_rollout=true ;;
    --helm) with_helm=true ;;
    *)
      echo "usage: cluster/build.sh [--update] [--e2e] [--kruise] [--kruise-manager] [--kruise-rollout] [--helm]" >&2
      exit 2
      ;;
  esac
done
e2e_mod="${here}/go/e2e"
kruise_mod="${here}/go/kruise-e2e"
kruise_rollout_mod="${here}/go/kruise-rollout"
helm_mod="${here}/go/helm"

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
kruise_rollout_version="$(required github.com/openkruise/rollouts "${kruise_rollout_mod}/go.mod")"
helm_version="$(required helm.sh/helm/v3 "${helm_mod}/go.mod")"
go_version="$(go env GOVERSION)"
key="k8s-${k8s_version}-etcd-${etcd_version}-kwok-${kwok_version}-${go_version}"
cache="${EDGEROLL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgeroll}/cluster-${key}"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
# kwok reads its stages as Stage objects (ADR 0018): the pinned module's own CRD defines them.
stage_crd="kwok-stage-crd.yaml"
stage_crd_in_module="${cache}/mod/sigs.k8s.io/kwok@${kwok_version}/kustomize/crd/bases/kwok.x-k8s.io_stages.yaml"

# Puts a cached file into cluster/bin: a hard link costs no space, a copy crosses file systems.
# One already there is left be, so two builds at once (CI's background build beside a stage's own
# call) never replace a binary under each other.
place() { # place FILE-IN-CACHE NAME-IN-BIN
  [ "$1" -ef "${bin_out}/$2" ] || ln -f "$1" "${bin_out}/$2" 2>/dev/null || cp -f "$1" "${bin_out}/$2"
}

link_binaries() {
  mkdir -p "$bin_out"
  # Builds cached before the CRD was needed have it only in their module cache.
  if [ ! -f "${cache}/bin/${stage_crd}" ]; then
    install -m 0644 "$stage_crd_in_module" "${cache}/bin/${stage_crd}"
  fi
  for b in "${binaries[@]}" "$stage_crd"; do place "${cache}/bin/${b}" "$b"; done
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
  place "${cache}/bin/e2e.test" e2e.test
}

# Helm, at the version cluster/go/helm/go.mod requires, under a marker naming that version.
build_helm() {
  if [ "$with_helm" != true ]; then return 0; fi
  local marker="${cache}/bin/.helm-${helm_version}-complete"
  if [ "$mod_mode" != readonly ] || [ ! -f "$marker" ]; then
    local t=$SECONDS
    log "building helm ${helm_version}"
    (cd "$helm_mod" && go mod download -x 2>&1) | progress "files fetched for helm" '^# get .*: 200 ' '^# get '
    # As Helm's Makefile stamps a release: its version, and the Kubernetes version it renders for
    # when no cluster is asked (client-go v0.N is Kubernetes 1.N).
    local client_go minor flags
    client_go="$(required k8s.io/client-go "${helm_mod}/go.mod")"
    minor="$(cut -d. -f2 <<<"$client_go")"
    flags="-X helm.sh/helm/v3/internal/version.version=${helm_version}"
    flags+=" -X helm.sh/helm/v3/internal/version.metadata="
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      flags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=${minor}"
    done
    (cd "$helm_mod" && go build -v -ldflags "-s -w ${flags}" -o "${cache}/bin/helm" \
      helm.sh/helm/v3/cmd/helm 2>&1) | progress "helm packages compiled" '^[^ :]+$' '^$'
    touch "$marker"
    log "built helm in $((SECONDS - t))s"
  fi
  place "${cache}/bin/helm" helm
}

# Modules built inside a copy of themselves, with their own go.mod and go.sum, unmodified (a
# wrapper module like cluster/go/e2e would drop their replace directives, which apply only when
# they are the main module): OpenKruise, at the version cluster/go/kruise-e2e/go.mod requires, and
# Kruise Rollout, at the one cluster/go/kruise-rollout/go.mod requires. From Kruise come
# kruise-e2e.test (its test/e2e, for the kruise-e2e stage) and kruise-manager (its main package,
# for the benchmark, ADR 0030) with its CRDs and webhook configurations in kruise-config/; from
# Kruise Rollout its manager and its e2e test binary, with its CRDs, webhook configurations and
# test data in kruise-rollout-config/ (issue 37). Each under a marker naming the module's version,
# so a bump rebuilds. Same module and build caches as the rest; a module is downloaded and copied
# once however many things are built from it.
declare -A upstream_module=(
  [kruise]=github.com/openkruise/kruise
  [kruise-rollout]=github.com/openkruise/rollouts
)
declare -A upstream_pin=([kruise]="$kruise_mod" [kruise-rollout]="$kruise_rollout_mod")
declare -A upstream_version=([kruise]="$kruise_version" [kruise-rollout]="$kruise_rollout_version")
declare -A upstream_src=()
trap 'rm -rf "${upstream_src[@]}"' EXIT

# upstream_source NAME: a writable copy of NAME's module, in ${upstream_src[NAME]}/module.
upstream_source() {
  local name="$1"
  if [ -n "${upstream_src[$name]:-}" ]; then return 0; fi
  local path="${upstream_module[$name]}" version="${upstream_version[$name]}"
  local pin="${upstream_pin[$name]}" json dir
  local module="${path}@${version}"
  # `go mod download M@V` checks the zip against go.sum but accepts (and records) a hash it
  # lacks, so in readonly mode a missing line is an error here, as it is for the other modules.
  if [ "$mod_mode" = readonly ] && ! grep -q "^${path} ${version} h1:" "${pin}/go.sum"; then
    echo "cluster/build.sh: ${pin}/go.sum has no hash for ${module}:" \
      "run cluster/build.sh --update with the flag that builds from it" >&2
    exit 1
  fi
  log "downloading ${module}"
  if ! json="$(cd "$pin" && go mod download -json "$module")"; then
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
  upstream_src[$name]="$(mktemp -d "${cache}/${name}-src.XXXXXX")"
  cp -R "$dir" "${upstream_src[$name]}/module"
  chmod -R u+w "${upstream_src[$name]}/module"
}

# build_upstream NAME ID OUTPUT PACKAGE test|main [PATH…]: compiles PACKAGE of NAME's module (its
# test binary, or the command) into ${cache}/bin/OUTPUT, and copies each PATH of the module into
# ${cache}/bin/NAME-config/ (a path under config/ without that prefix); then links both into
# cluster/bin. ID names the marker.
build_upstream() {
  local name="$1" id="$2" output="$3" package="$4" mode="$5"
  shift 5
  local version="${upstream_version[$name]}" config="${cache}/bin/${name}-config"
  local marker="${cache}/bin/.${id}-${version}-complete" path
  if [ "$mod_mode" != readonly ] || [ ! -f "$marker" ]; then
    local t=$SECONDS with_tests=() src
    if [ "$mode" = test ]; then with_tests=(-test); fi
    rm -f "${cache}/bin/.${id}-"*-complete
    upstream_source "$name"
    src="${upstream_src[$name]}"
    log "building ${output} (${upstream_module[$name]}@${version} ${package})"
    (
      cd "${src}/module"
      # -mod=readonly even with --update: the module's go.mod and go.sum are never rewritten.
      export GOFLAGS="-mod=readonly -buildvcs=false -trimpath"
      # Only the modules PACKAGE needs, checked against the module's go.sum (go prints one
      # `go: downloading` line per module).
      go list -deps "${with_tests[@]}" "$package" 2>&1 >/dev/null |
        progress "modules fetched for ${id}" '^go: downloading ' '^$'
      # `go test -c` names no package it compiles (its -v is the test binary's): `go build -v`
      # compiles the dependencies first, one line each, and the last step finds them in the build
      # cache, so both kinds report progress the same way. A package of tests only (Kruise
      # Rollout's test/e2e) has nothing to build on its own.
      go list -deps "${with_tests[@]}" \
        -f '{{if not .ForTest}}{{if ne .Name "main"}}{{if .GoFiles}}{{.ImportPath}}{{end}}{{end}}{{end}}' \
        "$package" >"${src}/${id}.packages"
      xargs go build -v <"${src}/${id}.packages" 2>&1 |
        progress "${id} packages compiled" '^[^ :]+$' '^$'
      if [ "$mode" = test ]; then
        go test -c -ldflags "-s -w" -o "${src}/${output}" "$package"
      else
        go build -ldflags "-s -w" -o "${src}/${output}" "$package"
      fi
    )
    for path in "$@"; do
      local to="${config}/${path#config/}"
      mkdir -p "$(dirname "$to")"
      rm -rf "$to"
      cp -R "${src}/module/${path}" "$to"
    done
    mv -f "${src}/${output}" "${cache}/bin/${output}"
    touch "$marker"
    log "built ${output} in $((SECONDS - t))s"
  fi
  place "${cache}/bin/${output}" "$output"
  if [ "$#" -gt 0 ]; then
    rm -rf "${bin_out}/${name}-config"
    cp -R -l "$config" "${bin_out}/${name}-config" 2>/dev/null ||
      cp -R "$config" "${bin_out}/${name}-config"
  fi
}

build_upstream_all() {
  if [ "$with_kruise" = true ]; then
    build_upstream kruise kruise-e2e kruise-e2e.test ./test/e2e test
  fi
  if [ "$with_kruise_manager" = true ]; then
    build_upstream kruise kruise-manager kruise-manager . main \
      config/crd/bases config/webhook/manifests.yaml
  fi
  if [ "$with_kruise_rollout" = true ]; then
    build_upstream kruise-rollout kruise-rollout-manager kruise-rollout-manager . main \
      config/crd config/webhook
    build_upstream kruise-rollout kruise-rollout-e2e kruise-rollout-e2e.test ./test/e2e test \
      test/e2e/test_data
  fi
  local name
  for name in "${!upstream_src[@]}"; do rm -rf "${upstream_src[$name]}"; done
  upstream_src=()
}

# What every go command here runs with: everything it downloads or compiles stays in the cache.
go_env() {
  export GOMODCACHE="${cache}/mod" GOCACHE="${cache}/build" GOTOOLCHAIN=local CGO_ENABLED=0
  # The committed go.sum files pin every module hash, so the checksum database (often unreachable
  # on the build machines) is never needed; a module missing from go.sum is an error in readonly
  # mode.
  export GOSUMDB=off GOFLAGS="-mod=${mod_mode} -buildvcs=false -trimpath"
  # Modules come from a module proxy only, never from their source hosts: `direct` is dropped
  # from GOPROXY's list (and with no proxy left, only the module cache is read).
  local proxies
  proxies="$(go env GOPROXY | tr '|,' '\n\n' | { grep -v -x -e direct -e off -e '' || true; } |
    paste -s -d, -)"
  export GOPROXY="${proxies:-off}"
}

if [ "$mod_mode" = readonly ] && [ -f "${cache}/bin/.complete" ]; then
  link_binaries
  log "cached build ${key}: linked ${binaries[*]} ${stage_crd} into cluster/bin"
  if [ "$with_e2e" = true ] || [ "$with_kruise" = true ] || [ "$with_kruise_manager" = true ] ||
    [ "$with_kruise_rollout" = true ] || [ "$with_helm" = true ]; then
    go_env
    build_e2e
    build_upstream_all
    build_helm
  fi
  exit 0
fi

go_env
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
build_upstream_all
build_helm
log "build ${key} done in $((SECONDS - started))s"
