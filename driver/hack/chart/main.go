// Writes the chart's crds/ folder, the CRD chart's templates and the rendered manifests (see package charts). Its argument is
// the charts package's directory; run by `go generate` in driver/pkg/apis.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"nodefleet.dev/driver/charts"
)

func main() {
	if err := generate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func generate() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: %s <driver/charts directory>", os.Args[0])
	}
	if err := os.Chdir(os.Args[1]); err != nil {
		return err
	}
	for name, content := range charts.CRDs() {
		if err := os.WriteFile(filepath.Join(charts.ChartDir, "crds", name), content, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(charts.CRDChartDir, "templates", name), content, 0o644); err != nil {
			return err
		}
	}
	helm, err := charts.FindHelm()
	if err != nil {
		return err
	}
	rendered, err := charts.RenderManifests(helm)
	if err != nil {
		return err
	}
	return os.WriteFile(charts.ManifestsFile, rendered, 0o644)
}
