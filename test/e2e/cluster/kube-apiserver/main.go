// The e2e cluster's kube-apiserver: the apiserver's own command from k8s.io/kubernetes, built from the
// Go module proxy at the version go.mod names (build-kube-apiserver.sh writes go.mod for other versions).
package main

import (
	"os"
	_ "time/tzdata" // for timeZone support in CronJob, as upstream's main

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
