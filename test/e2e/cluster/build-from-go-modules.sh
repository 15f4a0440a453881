#!/usr/bin/env bash
# Builds kube-apiserver (any version from 1.34 on) and etcd from the Go module proxy: kube-apiserver/ and
# etcd/ in this folder are small main modules around the upstream commands. Called by
# build-kube-apiserver.sh; idempotent: a binary built from the same sources is reused. No root needed.
# About 10 minutes on 2 cores the first time (kube-apiserver ~9, etcd ~1), seconds afterwards.
#   usage: build-from-go-modules.sh DIR KUBE_VERSION BUILD_DIR ETCD_VERSION
#   result: BUILD_DIR/bin/kube-apiserver and DIR/etcd-v<ETCD_VERSION>/bin/etcd
#
# The checked-in kube-apiserver/go.mod (and go.sum) pin the default version. For another version the module
# is written into BUILD_DIR/module: it requires k8s.io/kubernetes v1.X.Y and replaces every k8s.io staging
# module that k8s.io/kubernetes requires as v0.0.0 (in its own tree they are local directories) with the
# published v0.X.Y. A version whose go.mod needs a newer Go than the machine's: set GOTOOLCHAIN (e.g.
# GOTOOLCHAIN=go1.27.3) and the go command fetches that toolchain from the module proxy.
set -euo pipefail
DIR=$1 KUBE_VERSION=$2 BUILD_DIR=$3 ETCD_VERSION=$4
HERE=$(cd "$(dirname "$0")" && pwd)
# Bump when how the binaries are built changes: cached binaries of another revision are rebuilt.
REVISION=1
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "Go is needed to build kube-apiserver $KUBE_VERSION (go.dev toolchain 1.26+)" >&2; exit 1; }

# The stamp of a build: this script's revision, the Go version and every source file of the module.
stamp() { { echo "$REVISION"; go env GOVERSION; cat "$1"/main.go "$1"/go.mod "$1"/go.sum; } | sha256sum | cut -d' ' -f1; }
# Whether $1 was built from sources stamped $2 and runs.
built() { [ -x "$1" ] && [ "$(cat "$1.stamp" 2>/dev/null)" = "$2" ] && "$1" --version >/dev/null 2>&1; }

# etcd: one build for every kube version.
ETCD_BIN=$DIR/etcd-v$ETCD_VERSION/bin/etcd
if ! grep -qx "require go.etcd.io/etcd/server/v3 v$ETCD_VERSION" "$HERE/etcd/go.mod"; then
  echo "etcd/go.mod does not require go.etcd.io/etcd/server/v3 v$ETCD_VERSION (versions.sh names it)" >&2; exit 1
fi
ETCD_STAMP=$(stamp "$HERE/etcd")
if built "$ETCD_BIN" "$ETCD_STAMP"; then
  echo "etcd already built: $ETCD_BIN"
else
  mkdir -p "$(dirname "$ETCD_BIN")"
  echo "building etcd v$ETCD_VERSION from Go modules (about a minute)"
  (cd "$HERE/etcd" && go build -mod=readonly -trimpath -o "$ETCD_BIN.tmp" .) >"$DIR/etcd-v$ETCD_VERSION/build.log" 2>&1 ||
    { tail -30 "$DIR/etcd-v$ETCD_VERSION/build.log"; exit 1; }
  mv "$ETCD_BIN.tmp" "$ETCD_BIN"; echo "$ETCD_STAMP" >"$ETCD_BIN.stamp"
  "$ETCD_BIN" --version | head -1
fi

# kube-apiserver: the checked-in module for its version, else one written for the version asked.
APISERVER_BIN=$BUILD_DIR/bin/kube-apiserver
MODULE=$HERE/kube-apiserver
mkdir -p "$BUILD_DIR/bin"
if ! grep -qx "require k8s.io/kubernetes v$KUBE_VERSION" "$MODULE/go.mod"; then
  MODULE=$BUILD_DIR/module
  mkdir -p "$MODULE"
  if [ ! -f "$MODULE/go.sum" ]; then
    upstream=$(cd "$MODULE" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
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
APISERVER_STAMP=$(stamp "$MODULE")
if built "$APISERVER_BIN" "$APISERVER_STAMP"; then
  echo "kube-apiserver already built: $APISERVER_BIN"; exit 0
fi
echo "building kube-apiserver v$KUBE_VERSION from Go modules (about 10 minutes on 2 cores)"
minor=${KUBE_VERSION#1.}; minor=${minor%%.*}
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X '$pkg.gitVersion=v$KUBE_VERSION' -X '$pkg.gitMajor=1' -X '$pkg.gitMinor=$minor' -X '$pkg.gitTreeState=clean'"
done
(cd "$MODULE" && go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$APISERVER_BIN.tmp" .) >"$BUILD_DIR/build.log" 2>&1 ||
  { tail -30 "$BUILD_DIR/build.log"; exit 1; }
mv "$APISERVER_BIN.tmp" "$APISERVER_BIN"; echo "$APISERVER_STAMP" >"$APISERVER_BIN.stamp"
"$APISERVER_BIN" --version
