# Sourced by the cluster scripts: which kube-apiserver, etcd and kubectl a run uses, and where their builds live.
#   KUBE_E2E_VERSION  the kube-apiserver version, default 1.37.2 (the newest tested); 1.20.2 is the floor.
#                     1.20.2 is built from Debian's source package; any other version (1.34–1.37) from the Go
#                     module proxy (kube-apiserver/ in this folder).
#   DIR               the shared build and run directory ($KUBE_E2E_DIR or ~/.cache/kube-e2e)
# Sets KUBE_VERSION, KUBE_MINOR, BUILD_DIR (DIR/v<version>), APISERVER_BIN, ETCD_BIN and KUBECTL_BIN.
DEFAULT_KUBE_VERSION=1.37.2
# The floor is built from Debian's source package; nothing newer is packaged there.
DEBIAN_KUBE_VERSION=1.20.2
CLUSTER_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The version a main module's go.mod ($1) requires of module $2.
go_mod_version() { sed -n "s/^\\(require \\)\\?[[:space:]]*${2//\//\\/} v\\([^ ]*\\)\$/\\2/p" "$1" | sed -n 1p; }

KUBE_VERSION=${KUBE_E2E_VERSION:-$DEFAULT_KUBE_VERSION}
KUBE_VERSION=${KUBE_VERSION#v}
if ! [[ $KUBE_VERSION =~ ^1\.([0-9]+)\.[0-9]+$ ]]; then
  echo "KUBE_E2E_VERSION: expected a version such as $DEFAULT_KUBE_VERSION, got \"$KUBE_VERSION\"" >&2
  exit 2
fi
KUBE_MINOR=${BASH_REMATCH[1]}
BUILD_DIR=$DIR/v$KUBE_VERSION
APISERVER_BIN=$BUILD_DIR/bin/kube-apiserver
# etcd for the versions built from Go modules (etcd/go.mod); 1.20.2 uses Debian's etcd-server (3.4), which it
# was released with.
if [ "$KUBE_VERSION" = "$DEBIAN_KUBE_VERSION" ]; then
  ETCD_BIN=/usr/bin/etcd
else
  ETCD_BIN=$DIR/etcd-v$(go_mod_version "$CLUSTER_SCRIPTS/etcd/go.mod" go.etcd.io/etcd/server/v3)/bin/etcd
fi
# One kubectl (kubectl/go.mod: the newest) for every version: the tests that run `kubectl apply -k` need a
# kustomize with components, which 1.20's kubectl does not have.
KUBECTL_VERSION=1.$(go_mod_version "$CLUSTER_SCRIPTS/kubectl/go.mod" k8s.io/kubectl | sed 's/^0\.//')
KUBECTL_BIN=$DIR/kubectl-v$KUBECTL_VERSION/bin/kubectl
