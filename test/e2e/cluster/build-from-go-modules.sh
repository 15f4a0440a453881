#!/usr/bin/env bash
# Builds one of the e2e cluster's commands from the Go module proxy: kube-apiserver/, etcd/ and kubectl/ in this
# folder are small main modules around the upstream commands. Called by build-kube-apiserver.sh; idempotent: a
# binary built from the same sources is reused. No root needed. The first time, on 2 cores: kube-apiserver about
# 10 minutes, kubectl about 3, etcd about 1; seconds afterwards.
#   usage: build-from-go-modules.sh kube-apiserver KUBE_VERSION BUILD_DIR   → BUILD_DIR/bin/kube-apiserver
#          build-from-go-modules.sh etcd BIN                               → BIN (etcd/go.mod's version)
#          build-from-go-modules.sh kubectl BIN                            → BIN (kubectl/go.mod's version)
#
# The checked-in kube-apiserver/go.mod (and go.sum) pin the default version. For another version the module
# is written into BUILD_DIR/module: it requires k8s.io/kubernetes v1.X.Y and replaces every k8s.io staging
# module that k8s.io/kubernetes requires as v0.0.0 (in its own tree they are local directories) with the
# published v0.X.Y. A version whose go.mod needs a newer Go than the machine's: set GOTOOLCHAIN (e.g.
# GOTOOLCHAIN=go1.27.3) and the go command fetches that toolchain from the module proxy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# Bump when how the binaries are built changes: cached binaries of another revision are rebuilt.
REVISION=1
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "Go (1.26 or newer) is needed to build the e2e cluster's $1" >&2; exit 1; }

# The stamp of a build: this script's revision, the Go version and every source file of the module.
stamp() { { echo "$REVISION"; go env GOVERSION; cat "$1"/main.go "$1"/go.mod "$1"/go.sum; } | sha256sum | cut -d' ' -f1; }

# The version a Kubernetes command reports (/version, kubectl version), as upstream's build sets it.
version_ldflags() {
  local minor=${1#1.}; minor=${minor%%.*}; local flags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X '$pkg.gitVersion=v$1' -X '$pkg.gitMajor=1' -X '$pkg.gitMinor=$minor' -X '$pkg.gitTreeState=clean'"
  done
  echo "$flags"
}

# build NAME MODULE BIN MINUTES [LDFLAGS]: builds MODULE's main package into BIN unless built from these sources.
build() {
  local name=$1 module=$2 bin=$3 minutes=$4 ldflags=${5:-} stamp
  stamp=$(stamp "$module")
  if [ -x "$bin" ] && [ "$(cat "$bin.stamp" 2>/dev/null)" = "$stamp" ]; then echo "$name already built: $bin"; return; fi
  mkdir -p "$(dirname "$bin")"
  echo "building $name from Go modules (about $minutes minutes on 2 cores)"
  (cd "$module" && go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$bin.tmp" .) >"$bin.build.log" 2>&1 ||
    { tail -30 "$bin.build.log"; exit 1; }
  mv "$bin.tmp" "$bin"; echo "$stamp" >"$bin.stamp"
}

# The version go.mod $1 requires of module $2 (on a require line or in a require block).
required() { sed -n "s/^\\(require \\)\\?[[:space:]]*${2//\//\\/} \\(v[^ ]*\\)\$/\\2/p" "$1" | sed -n 1p; }

case $1 in
  etcd)
    build etcd "$HERE/etcd" "$2" 1
    "$2" --version | sed -n 1p ;;
  kubectl)
    version=$(required "$HERE/kubectl/go.mod" k8s.io/kubectl)
    build kubectl "$HERE/kubectl" "$2" 3 "$(version_ldflags "1.${version#v0.}")"
    "$2" version --client | sed -n 1p ;;
  kube-apiserver)
    KUBE_VERSION=$2 BUILD_DIR=$3
    MODULE=$HERE/kube-apiserver
    if [ "$(required "$MODULE/go.mod" k8s.io/kubernetes)" != "v$KUBE_VERSION" ]; then
      MODULE=$BUILD_DIR/module
      mkdir -p "$MODULE"
      if [ ! -f "$MODULE/go.sum" ]; then
        upstream=$(cd "$MODULE" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" |
          sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
        [ -f "$upstream" ] || { echo "the module proxy has no k8s.io/kubernetes v$KUBE_VERSION" >&2; exit 1; }
        cp "$HERE/kube-apiserver/main.go" "$MODULE/"
        {
          printf 'module admission-gateway.e2e/kube-apiserver\n\n'
          sed -n 's/^go \(.*\)$/go \1/p' "$upstream"; echo
          printf 'require k8s.io/kubernetes v%s\n\nreplace (\n' "$KUBE_VERSION"
          awk -v v="v0.${KUBE_VERSION#1.}" '/^\tk8s\.io\/[^ ]+ v0\.0\.0$/ { print "\t" $1 " => " $1 " " v }' "$upstream"
          printf ')\n'
        } >"$MODULE/go.mod"
        (cd "$MODULE" && go mod tidy) || { rm -f "$MODULE/go.sum"; exit 1; }
      fi
    fi
    build "kube-apiserver v$KUBE_VERSION" "$MODULE" "$BUILD_DIR/bin/kube-apiserver" 10 "$(version_ldflags "$KUBE_VERSION")"
    "$BUILD_DIR/bin/kube-apiserver" --version ;;
  *) echo "usage: build-from-go-modules.sh kube-apiserver VERSION BUILD_DIR | etcd BIN | kubectl BIN" >&2; exit 2 ;;
esac
