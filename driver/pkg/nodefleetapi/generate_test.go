package nodefleetapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed client must be what the generator makes of the committed openapi.json, so an API
// change cannot land without the driver's client following it.
func TestGeneratedClientIsCurrent(t *testing.T) {
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatalf("reading the committed client: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "client.gen.go")
	generate := exec.Command("go", "tool", "-modfile=../../go.tools.mod", "oapi-codegen",
		"-config", "oapi-codegen.yaml", "-o", fresh, "../../../openapi.json")
	if output, err := generate.CombinedOutput(); err != nil {
		t.Fatalf("running oapi-codegen: %v\n%s", err, output)
	}
	generated, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatalf("reading the generated client: %v", err)
	}
	if !bytes.Equal(committed, generated) {
		t.Fatalf("pkg/nodefleetapi/client.gen.go is stale against openapi.json: run `go generate ./...` in driver/ and commit the result")
	}
}
