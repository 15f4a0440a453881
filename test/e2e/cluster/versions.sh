# Sourced by the cluster scripts: which kube-apiserver and etcd a run uses, and where their builds live.
#   KUBE_E2E_VERSION  the kube-apiserver version, default 1.37.2 (the newest tested); 1.20.2 is the floor.
#                     1.20.2 is built from Debian's source package; any other version (1.34–1.37) from the Go
#                     module proxy (kube-apiserver/ and etcd/ in this folder).
#   DIR               the shared build and run directory ($KUBE_E2E_DIR or ~/.cache/kube-e2e)
# Sets KUBE_VERSION, KUBE_MINOR, BUILD_DIR (DIR/v<version>), APISERVER_BIN and ETCD_BIN.
DEFAULT_KUBE_VERSION=1.37.2
# The floor is built from Debian's source package; nothing newer is packaged there.
DEBIAN_KUBE_VERSION=1.20.2
# etcd for the versions built from Go modules (1.20.2 uses Debian's etcd-server, 3.4, which it was tested with).
ETCD_VERSION=3.7.3

KUBE_VERSION=${KUBE_E2E_VERSION:-$DEFAULT_KUBE_VERSION}
KUBE_VERSION=${KUBE_VERSION#v}
if ! [[ $KUBE_VERSION =~ ^1\.([0-9]+)\.[0-9]+$ ]]; then
  echo "KUBE_E2E_VERSION: expected a version such as $DEFAULT_KUBE_VERSION, got \"$KUBE_VERSION\"" >&2
  exit 2
fi
KUBE_MINOR=${BASH_REMATCH[1]}
BUILD_DIR=$DIR/v$KUBE_VERSION
APISERVER_BIN=$BUILD_DIR/bin/kube-apiserver
if [ "$KUBE_VERSION" = "$DEBIAN_KUBE_VERSION" ]; then
  ETCD_BIN=/usr/bin/etcd
else
  ETCD_BIN=$DIR/etcd-v$ETCD_VERSION/bin/etcd
fi
