package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"nodefleet.dev/toolchain/providers/internal/scriptedapi"
)

// fakeAPI answers the Scaleway API calls a test scripts (scriptedapi); bodies are built from the SDK's own types.
type fakeAPI = scriptedapi.API

const (
	testZone    = "fr-par-2"
	testProject = "11111111-1111-1111-1111-111111111111"
	testSecret  = "22222222-2222-2222-2222-222222222222"
)

// newCloud starts the fake and a cloud configured against it through SCW_* variables, polling every millisecond.
func newCloud(t *testing.T, routes scriptedapi.Routes) (*cloud, *fakeAPI) {
	t.Helper()
	f := scriptedapi.Start(t, routes, func(key string) any {
		return map[string]any{"message": "no route " + key, "type": "not_found", "resource": "route", "resource_id": key}
	})
	t.Setenv("SCW_CONFIG_PATH", t.TempDir()+"/none.yaml")
	t.Setenv("SCW_API_URL", f.URL)
	t.Setenv("SCW_ACCESS_KEY", "SCWXXXXXXXXXXXXXXXXX")
	t.Setenv("SCW_SECRET_KEY", testSecret)
	t.Setenv("SCW_DEFAULT_PROJECT_ID", testProject)
	t.Setenv("SCW_DEFAULT_ZONE", testZone)
	t.Setenv("SCW_DEFAULT_REGION", "")
	c := &cloud{retryInterval: time.Millisecond}
	if err := c.configure(resource.PropertyMap{}); err != nil {
		t.Fatal(err)
	}
	return c, f
}

func ok(body any) func(int) (int, any) { return func(int) (int, any) { return http.StatusOK, body } }

func notFoundBody(resourceName, id string) map[string]any {
	return map[string]any{"message": "resource is not found", "type": "not_found", "resource": resourceName, "resource_id": id}
}

var index = scriptedapi.Index
