#!/usr/bin/env bash
# The floor: builds kube-apiserver v1.20.2 from Debian bookworm's `kubernetes` SOURCE package (the full
# upstream tree with vendor/) and Debian's Go 1.19. Called by build-kube-apiserver.sh with
# KUBE_E2E_VERSION=1.20.2; idempotent: reuses a finished binary. Needs root (apt). About 5 minutes on 2 cores
# the first time, seconds afterwards.
#   usage: build-kube-apiserver-debian.sh BUILD_DIR
#   result: BUILD_DIR/bin/kube-apiserver; etcd comes from Debian's etcd-server package (/usr/bin/etcd)
set -euo pipefail
DIR=$1
VER=1.20.5+really1.20.2-1.1+deb12u1
# Bump when the source patches below change: a cached binary of another revision is rebuilt.
REVISION=2
mkdir -p "$DIR/bin" "$DIR/home"
export DEBIAN_FRONTEND=noninteractive

if [ -x "$DIR/bin/kube-apiserver" ] && [ "$(cat "$DIR/bin/.revision" 2>/dev/null)" = "$REVISION" ] &&
  "$DIR/bin/kube-apiserver" --version >/dev/null 2>&1; then
  command -v etcd >/dev/null || apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null
  echo "kube-apiserver already built: $DIR/bin/kube-apiserver"; exit 0
fi

# Debian source packages need a deb-src entry.
SRC=/etc/apt/sources.list.d/kube-e2e-src.sources
if ! apt-cache showsrc kubernetes 2>/dev/null | grep -q "^Version: $VER"; then
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$SRC"
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends golang-1.19-go etcd-server etcd-client dpkg-dev openssl curl rsync jq \
  golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev >/dev/null

cd "$DIR"
if [ ! -d src ]; then
  apt-get source --download-only "kubernetes=$VER" >/dev/null
  dpkg-source -x "kubernetes_$VER.dsc" src >/dev/null
fi
cd src
# The vendored reflect2 1.0.1 segfaults under Go >= 1.18 (the mutating-webhook plugin crashes on its first
# patch); Debian's reflect2 1.0.2 / json-iterator 1.1.12 are drop-in replacements.
V=vendor/github.com
rm -f $V/modern-go/reflect2/*.go $V/modern-go/reflect2/*.s $V/json-iterator/go/*.go
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go /usr/share/gocode/src/github.com/modern-go/reflect2/*.s $V/modern-go/reflect2/
cp /usr/share/gocode/src/github.com/json-iterator/go/*.go $V/json-iterator/go/
rm -f $V/modern-go/reflect2/*_test.go $V/json-iterator/go/*_test.go
# Built with Go >= 1.16, the vendored OpenAPI type validator takes "" (and every zero value) for null and
# refuses `apiGroups: [""]` in custom resources (kubernetes/kubernetes#99804); kube-openapi#230 checks only nil.
for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
  sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$f"
done

export PATH=/usr/lib/go-1.19/bin:$PATH GOCACHE=$DIR/gocache CGO_ENABLED=0 GOPROXY=off GOPATH=$DIR/src/.go
unset GOFLAGS
mkdir -p .go/src/k8s.io; [ -L .go/src/k8s.io/kubernetes ] || ln -s ../../.. .go/src/k8s.io/kubernetes
export KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean KUBE_GIT_COMMIT=faecb196815e248d3ecfb03c680a4507229c2a56
env HOME="$DIR/home" make WHAT=cmd/kube-apiserver >"$DIR/build.log" 2>&1 || { tail -30 "$DIR/build.log"; exit 1; }
cp _output/bin/kube-apiserver "$DIR/bin/"
echo "$REVISION" >"$DIR/bin/.revision"
"$DIR/bin/kube-apiserver" --version
