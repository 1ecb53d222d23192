#!/usr/bin/env bash
# Builds the real control plane the end-to-end tests run against, from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl of one Kubernetes release
# (version-stamped), the etcd that fits it, kwok/kwokctl v0.8.0 and krew v0.4.3.
#
#   bash hack/build-control-plane.sh [MINOR]     e.g. 1.26, v1.31 or v1.26.13; or K8S_VERSION=1.26
#
# Default: the newest supported minor (1.36). Each minor has its own wrapper Go module,
# hack/controlplane/kubernetes-v1.MINOR/ (made by hack/controlplane/new-kubernetes-wrapper.sh),
# which pins the exact patch release; etcd 3.5 serves the minors before 1.34, etcd 3.6 the rest.
#
# Idempotent: each component is built once into a cache outside the repository, keyed by its
# version (and by the wrapper module's go.sum), and reused afterwards. Prints the directory
# holding the binaries on its last line. Any build failure exits non-zero, loudly.
set -euo pipefail

DEFAULT_K8S_MINOR=1.36
KWOK_VERSION=v0.8.0
KREW_VERSION=v0.4.3  # the newest krew the Go module proxy serves (v0.4.5 answers 403)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NODEFAIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-nodefail}
bindir=$cache/bin
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

log() { printf '[build-control-plane %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }

# The requested minor -> its wrapper module, the exact release it pins, and the etcd that fits.
requested=${1:-${K8S_VERSION:-$DEFAULT_K8S_MINOR}}
[[ $requested =~ ^v?1\.([0-9]+)(\.[0-9]+)?$ ]] ||
  fail "Kubernetes version '$requested' is not MAJOR.MINOR[.PATCH], e.g. 1.26"
K8S_MINOR=${BASH_REMATCH[1]}
k8s_module=$here/controlplane/kubernetes-v1.$K8S_MINOR
if [ ! -f "$k8s_module/go.mod" ]; then
  known=$(cd "$here/controlplane" && ls -d kubernetes-v1.* | sed 's/kubernetes-v//' | sort -t. -k2 -n | paste -sd' ')
  fail "no wrapper module for Kubernetes 1.$K8S_MINOR (supported: $known)"
fi
K8S_VERSION=$(sed -n 's|^require k8s.io/kubernetes \(v[0-9.]*\)$|\1|p' "$k8s_module/go.mod")
[ -n "$K8S_VERSION" ] || fail "$k8s_module/go.mod does not require k8s.io/kubernetes on one line"
if [[ $requested =~ \.[0-9]+\.[0-9]+$ ]] && [ "v${requested#v}" != "$K8S_VERSION" ]; then
  fail "asked for v${requested#v}, but $k8s_module pins $K8S_VERSION"
fi
# Releases that still carry the in-tree cloud providers (AWS, Azure, GCE, vSphere SDKs: minutes
# of compiling on two cores) are built without them; the tests use no cloud provider.
k8s_tags=""
if grep -q k8s.io/legacy-cloud-providers "$k8s_module/go.mod"; then k8s_tags=providerless; fi
if [ "$K8S_MINOR" -ge 34 ]; then etcd_module=$here/controlplane/etcd-v3.6; else etcd_module=$here/controlplane/etcd-v3.5; fi
ETCD_VERSION=$(sed -n 's|^[[:space:]]*go.etcd.io/etcd/server/v3 \(v[0-9.]*\)$|\1|p' "$etcd_module/go.mod")
[ -n "$ETCD_VERSION" ] || fail "$etcd_module/go.mod does not require go.etcd.io/etcd/server/v3"

# key NAME VERSION [FILE...] -> a cache folder name that changes when the version or inputs do
key() {
  local name=$1 version=$2; shift 2
  local sum=""
  if [ $# -gt 0 ]; then sum=-$(cat "$@" | sha256sum | cut -c1-12); fi
  printf '%s/%s-%s%s' "$bindir" "$name" "$version" "$sum"
}

# build_into DEST "BINARIES" COMMAND... : runs COMMAND with $out set to a fresh folder, then
# moves it to DEST in one step so a half-built cache is never mistaken for a complete one.
build_into() {
  local dest=$1 binaries=$2; shift 2
  local missing=0 b
  for b in $binaries; do [ -x "$dest/$b" ] || missing=1; done
  if [ "$missing" = 0 ]; then log "cached: $dest"; return 0; fi
  local start=$SECONDS
  out=$(mktemp -d "$bindir/.building.XXXXXX")
  trap 'rm -rf "$out"' EXIT
  log "building $(basename "$dest") (this can take a while on a cold machine)"
  "$@"
  for b in $binaries; do
    [ -x "$out/$b" ] || { log "FAILED: $b was not produced"; exit 1; }
  done
  rm -rf "$dest"
  mv "$out" "$dest"
  trap - EXIT
  log "built $(basename "$dest") in $((SECONDS - start))s"
}

# Version stamping: without it the binaries report v0.0.0 and /version lies.
k8s_ldflags() {
  local minor=$K8S_MINOR
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "$ld"
}

# kube-apiserver, kube-controller-manager, kube-scheduler (and kubectl when its cache is missing
# too, as on a cold machine) in one `go build`: the go command then compiles the packages they
# share once and uses both cores to the end, linking one binary while it compiles another.
K8S_COMMANDS="kube-apiserver kube-controller-manager kube-scheduler"
build_kubernetes() {
  local pkgs="" cmd
  for cmd in $K8S_COMMANDS ${with_kubectl:+kubectl}; do pkgs="$pkgs k8s.io/kubernetes/cmd/$cmd"; done
  log "  go build$(printf ' %s' $K8S_COMMANDS ${with_kubectl:+kubectl})"
  # shellcheck disable=SC2086  # the package list is split on purpose
  (cd "$k8s_module" && go build -tags "$k8s_tags" -trimpath -ldflags "$(k8s_ldflags)" -o "$out/" $pkgs)
  if [ -n "$with_kubectl" ]; then
    [ -x "$out/kubectl" ] || { log "FAILED: kubectl was not produced"; exit 1; }
    kubectl_side=$(mktemp -d "$bindir/.building.XXXXXX")
    mv "$out/kubectl" "$kubectl_side/kubectl"
  fi
}

# etcd, etcdctl and etcdutl in one `go build` (the server's binary is named after its package).
build_etcd() {
  (cd "$etcd_module" &&
    go build -trimpath -ldflags "-s -w" -o "$out/" \
      go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3 &&
    mv "$out/server" "$out/etcd")
}

build_kubectl() {
  (cd "$k8s_module" &&
    go build -tags "$k8s_tags" -trimpath -ldflags "$(k8s_ldflags)" -o "$out/kubectl" k8s.io/kubernetes/cmd/kubectl)
}

build_kwok() {
  GOBIN=$out go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
}

build_krew() {
  GOBIN=$out go install -trimpath -ldflags "-s -w" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION"
}

mkdir -p "$bindir"
command -v go >/dev/null || { log "FAILED: go is not on PATH (Go 1.26 is required)"; exit 1; }

k8s=$(key kubernetes "$K8S_VERSION${k8s_tags:+-$k8s_tags}" "$k8s_module/go.sum")
etcd=$(key etcd "$ETCD_VERSION" "$etcd_module/go.sum")
kwok=$(key kwok "$KWOK_VERSION")
krew=$(key krew "$KREW_VERSION")
kubectl=$(key kubectl "$K8S_VERSION${k8s_tags:+-$k8s_tags}" "$k8s_module/go.sum")

# The folder of links the tests use (made below). Its name carries a digest of what it points
# to, so its content never changes once made: a suite running from it is never disturbed by a
# later call.
link_set_dir() {
  targets=$(for d in "$etcd" "$kwok" "$k8s" "$kubectl" "$krew"; do ls -d "$d"/*; done)
  digest=$(printf '%s\n' "$targets" | sha256sum | cut -c1-12)
  set_dir=$bindir/controlplane-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-$digest
}

# Warm: every binary in place (each folder is moved there complete, in one step) and the folder
# of links made. Then no lock is needed: the test suites ask at every control plane they start
# (several at once with parallel workers) and must not wait behind a build of another minor.
complete() {
  local dest=$1 b; shift
  for b in "$@"; do [ -x "$dest/$b" ] || return 1; done
}
if complete "$etcd" etcd etcdctl etcdutl && complete "$kwok" kwok kwokctl &&
  complete "$k8s" $K8S_COMMANDS &&
  complete "$kubectl" kubectl && complete "$krew" krew; then
  link_set_dir
  if [ -d "$set_dir" ]; then
    log "control plane cached in $set_dir"
    echo "$set_dir"
    exit 0
  fi
fi

# One build at a time on this machine: a second checkout (or a developer) waits here instead of
# building the same binaries into the same cache concurrently. The lock is released on exit.
exec 9>"$bindir/.lock"
if ! flock -n 9; then
  log "another build holds $bindir/.lock; waiting for it"
  flock 9
fi

build_into "$etcd" "etcd etcdctl etcdutl" build_etcd
build_into "$kwok" "kwok kwokctl" build_kwok
with_kubectl=""
if ! complete "$kubectl" kubectl; then with_kubectl=yes; fi
kubectl_side=""
# shellcheck disable=SC2086
build_into "$k8s" "$K8S_COMMANDS" build_kubernetes
if [ -n "$kubectl_side" ]; then  # built beside the others: moved into its own cache folder
  rm -rf "$kubectl"
  mv "$kubectl_side" "$kubectl"
fi
build_into "$kubectl" "kubectl" build_kubectl
build_into "$krew" "krew" build_krew

# The folder of links, built under a temporary name and renamed into place in one step, only
# when missing.
rm -rf "$bindir"/.building.*  # leftovers of an interrupted build (we hold the lock)
link_set_dir
if [ ! -d "$set_dir" ]; then
  tmp=$(mktemp -d "$bindir/.links.XXXXXX")
  for f in $targets; do ln -s "$f" "$tmp/$(basename "$f")"; done
  mv -T "$tmp" "$set_dir" 2>/dev/null || rm -rf "$tmp"  # lost a race: an identical one exists
fi
log "control plane ready in $set_dir: $("$set_dir/kube-apiserver" --version)"
echo "$set_dir"
