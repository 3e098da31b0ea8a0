#!/usr/bin/env bash
# Builds every binary of the local test cluster from Go modules into a cache outside the repo,
# one directory per component and version, so later runs (and CI on the same machine) reuse it.
# Usage: build.sh [KUEUE_VERSION|legacy]   (default: $DW_KUEUE_VERSION, else KUEUE_VERSION)
#        build.sh quantity-oracle          only the quantity oracle; prints its path on stdout
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
kueue_version="${1:-${DW_KUEUE_VERSION:-$KUEUE_VERSION}}"
[[ "$kueue_version" == legacy ]] && kueue_version="$KUEUE_LEGACY_VERSION"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/jupyter-dw/bin"
export GOFLAGS=-mod=mod

command -v go >/dev/null || { echo "build.sh: Go is required (https://go.dev/dl)" >&2; exit 1; }

# The quantity oracle (tests/unit/test_quantity_oracle.py): Kubernetes' own ParseQuantity,
# from the apimachinery release the Kubernetes build below replaces to. Its source is in this
# repo, so the cache directory is named by a hash of that source as well as the version.
oracle_src="$here/go/quantity-oracle"
apimachinery="$(sed -n 's#^[[:space:]]*k8s.io/apimachinery => k8s.io/apimachinery \(v[^[:space:]]*\)$#\1#p' "$here/go/kubernetes/go.mod")"
if ! grep -q "^require k8s.io/apimachinery $apimachinery\$" "$oracle_src/go.mod"; then
  echo "build.sh: go/quantity-oracle/go.mod must require k8s.io/apimachinery $apimachinery, as go/kubernetes/go.mod does" >&2
  exit 1
fi
oracle_hash="$(cat "$oracle_src/go.mod" "$oracle_src/go.sum" "$oracle_src/main.go" | sha256sum | cut -c1-12)"
oracle_dir="$cache/quantity-oracle-$apimachinery-$oracle_hash"
if [[ ! -x "$oracle_dir/quantity-oracle" ]]; then
  echo "building the quantity oracle (apimachinery $apimachinery)" >&2
  mkdir -p "$oracle_dir.tmp"
  (cd "$oracle_src" && GOFLAGS=-mod=readonly go build -o "$oracle_dir.tmp/quantity-oracle" .)
  rm -rf "$oracle_dir" && mv "$oracle_dir.tmp" "$oracle_dir"
fi
if [[ "$kueue_version" == quantity-oracle ]]; then
  echo "$oracle_dir/quantity-oracle"
  exit 0
fi

kube_version="$(cd "$here/go/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
kube_dir="$cache/kubernetes-$kube_version"
if [[ ! -x "$kube_dir/kube-scheduler" || ! -x "$kube_dir/kube-apiserver" || ! -x "$kube_dir/kube-controller-manager" ]]; then
  echo "building Kubernetes $kube_version (first time: several minutes)" >&2
  mkdir -p "$kube_dir.tmp"
  # Kubernetes' own build stamps its version into the binaries; without it the API server
  # reports v0.0.0-master, which clients that parse the server version (Kueue) reject.
  minor="${kube_version#v1.}"; minor="${minor%%.*}"
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$here/go/kubernetes" && go build -ldflags="$ldflags" -o "$kube_dir.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler)
  rm -rf "$kube_dir" && mv "$kube_dir.tmp" "$kube_dir"
fi

# Each of these modules is built as its own main module, from its source in the module cache,
# so its own go.mod and go.sum decide every dependency (none of them uses replace directives).
# Not `go install module@version`: that also lists the module's versions, which the proxy refuses.
module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }
# A sixth argument builds from that directory instead of the module's (a patched copy); it is
# recorded beside the binary, so a binary cached from another source is rebuilt.
build_module() { # name version module package binary [source directory]
  local dir="$cache/$1-$2" src="${6:-}" from
  if [[ ! -x "$dir/$5" || "$(cat "$dir/source" 2>/dev/null)" != "$src" ]]; then
    echo "building $1 $2${src:+ from $src}" >&2
    from="${src:-$(module_dir "$3@$2")}"
    [[ -d "$from" ]] || { echo "build.sh: no source for $3@$2" >&2; exit 1; }
    mkdir -p "$dir.tmp"
    (cd "$from" && GOFLAGS=-mod=readonly go build -o "$dir.tmp/$5" "$4")
    printf '%s' "$src" >"$dir.tmp/source"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
}
kueue_src="$(module_dir "sigs.k8s.io/kueue@$kueue_version")"
# Kueue 0.14 serves its visibility API on port 8082 of every address: the port is hard-coded
# and the address is the apiserver library's default, 0.0.0.0, which no setting of 0.14 changes
# (later releases read both from their configuration). Everything the test bed runs listens on
# 127.0.0.1 only, so such a release is built from a copy of its module with one line added
# after that port: bind address 127.0.0.1. The copy is kept beside the binaries, named by a
# hash of the patched file (the module cache is read-only, and `go build -overlay` refuses
# files in it). Cold cost: copying 18 MB; the build is Kueue's own.
kueue_copy=""
visibility_go="pkg/visibility/server.go"
if grep -q $'^\to.SecureServing.BindPort = 8082$' "$kueue_src/$visibility_go" 2>/dev/null; then
  patched="$(sed $'s/^\to.SecureServing.BindPort = 8082$/&\\\n\to.SecureServing.BindAddress = net.ParseIP("127.0.0.1")/' "$kueue_src/$visibility_go")"
  kueue_copy="$cache/src/kueue-$kueue_version-$(printf '%s' "$patched" | sha256sum | cut -c1-12)"
  if [[ ! -f "$kueue_copy/go.mod" ]]; then
    rm -rf "$kueue_copy.tmp" && mkdir -p "$cache/src"
    cp -r "$kueue_src" "$kueue_copy.tmp" && chmod -R u+w "$kueue_copy.tmp"
    printf '%s\n' "$patched" >"$kueue_copy.tmp/$visibility_go"
    mv "$kueue_copy.tmp" "$kueue_copy"
  fi
fi
build_module kueue "$kueue_version" sigs.k8s.io/kueue ./cmd/kueue kueue "$kueue_copy"
# The ProvisioningRequest CRD the test bed applies comes from the cluster autoscaler's API module
# at the version Kueue's go.mod requires (its build fetches it; a cached binary may not have).
autoscaler_apis="k8s.io/autoscaler/cluster-autoscaler/apis"
autoscaler_version="$(sed -n "s#^[[:space:]]*\(require[[:space:]]\+\)\?$autoscaler_apis \(v[^[:space:]]*\).*#\2#p" "$kueue_src/go.mod" | head -1)"
[[ -n "$autoscaler_version" ]] || { echo "build.sh: Kueue's go.mod does not require $autoscaler_apis" >&2; exit 1; }
go mod download "$autoscaler_apis@$autoscaler_version"
build_module kuberay "$KUBERAY_VERSION" github.com/ray-project/kuberay/ray-operator . ray-operator
build_module kwok "$KWOK_VERSION" sigs.k8s.io/kwok ./cmd/kwok kwok
build_module metrics-server "$METRICS_SERVER_VERSION" sigs.k8s.io/metrics-server \
  ./cmd/metrics-server metrics-server
# Trainer and JobSet only beside a Kueue whose TrainJob integration targets this Trainer
# (its go.mod requires it); measured cold: about 96 s + 72 s on 2 cores.
if grep -q "github.com/kubeflow/trainer/v2 $TRAINER_VERSION" "$kueue_src/go.mod"; then
  build_module trainer "$TRAINER_VERSION" github.com/kubeflow/trainer/v2 \
    ./cmd/trainer-controller-manager trainer-controller-manager
  build_module jobset "$JOBSET_VERSION" sigs.k8s.io/jobset . jobset-controller-manager
fi

if ! command -v etcd >/dev/null; then
  echo "etcd not found: install Debian's etcd-server (make deps does)" >&2
  exit 1
fi
