// The e2e suite's kubectl, for the tests that apply the shipped manifests with `kubectl apply -k`: upstream's
// cmd/kubectl main around the published k8s.io/kubectl module, at the version go.mod names.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client auth plugins, as upstream's main
)

func main() {
	// Upstream parses the verbosity before the command is built, so that building it can log.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
