package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// fakeAPI answers the Scaleway API calls a test scripts and logs each as "METHOD /path", so a test
// can assert the calls upstream makes and their order. Bodies are built from the SDK's own types.
type fakeAPI struct {
	mu     sync.Mutex
	calls  []string
	routes map[string]func(n int) (int, any) // by "METHOD /path"; n counts earlier calls of it
}

const (
	testZone    = "fr-par-2"
	testProject = "11111111-1111-1111-1111-111111111111"
	testSecret  = "22222222-2222-2222-2222-222222222222"
)

// newCloud starts the fake and a cloud configured against it through SCW_* variables, polling every millisecond.
func newCloud(t *testing.T, routes map[string]func(n int) (int, any)) (*cloud, *fakeAPI) {
	t.Helper()
	f := &fakeAPI{routes: routes}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("SCW_CONFIG_PATH", t.TempDir()+"/none.yaml")
	t.Setenv("SCW_API_URL", srv.URL)
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

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	n := 0
	for _, c := range f.calls {
		if c == key {
			n++
		}
	}
	f.calls = append(f.calls, key)
	route, ok := f.routes[key]
	f.mu.Unlock()
	status, body := http.StatusNotFound, any(map[string]any{"message": "no route " + key, "type": "not_found", "resource": "route", "resource_id": key})
	if ok {
		status, body = route(n)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

func (f *fakeAPI) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func ok(body any) func(int) (int, any) { return func(int) (int, any) { return http.StatusOK, body } }

func notFoundBody(resourceName, id string) map[string]any {
	return map[string]any{"message": "resource is not found", "type": "not_found", "resource": resourceName, "resource_id": id}
}

func index(calls []string, key string) int {
	for i, c := range calls {
		if c == key {
			return i
		}
	}
	return -1
}
