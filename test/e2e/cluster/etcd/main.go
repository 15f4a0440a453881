// The e2e cluster's etcd: etcd's own entry point, built from the Go module proxy at the version go.mod names.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
