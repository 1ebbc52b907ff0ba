package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// fakeAPI answers the few Hetzner API calls a test scripts, and logs every request as
// "METHOD /path" so a test can assert the order upstream makes them in.
type fakeAPI struct {
	mu     sync.Mutex
	calls  []string
	routes map[string]func(n int) (int, any) // by "METHOD /path"; n counts the calls so far
}

// newCloud starts the fake and a configured cloud against it, with retries shortened.
func newCloud(t *testing.T, routes map[string]func(n int) (int, any)) (*cloud, *fakeAPI) {
	t.Helper()
	f := &fakeAPI{routes: routes}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	saved := retryBase
	retryBase = time.Millisecond
	t.Cleanup(func() { retryBase = saved })
	t.Setenv("HCLOUD_TOKEN", "")
	c := &cloud{}
	if err := c.configure(config(map[string]string{"token": strings.Repeat("t", 64), "endpoint": srv.URL, "pollInterval": "1ms"})); err != nil {
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
	status, body := http.StatusNotFound, any(apiError("not_found", "no route "+key))
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

func apiError(code, message string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": message}}
}

func action(id int, command, status string) map[string]any {
	a := map[string]any{"id": id, "command": command, "status": status, "progress": 100, "started": "2026-01-01T00:00:00Z", "resources": []any{}}
	if status == "error" {
		a["error"] = map[string]any{"code": "action_failed", "message": "the action failed"}
	}
	return a
}

func count(calls []string, key string) int {
	n := 0
	for _, c := range calls {
		if c == key {
			n++
		}
	}
	return n
}

func index(calls []string, key string) int {
	for i, c := range calls {
		if c == key {
			return i
		}
	}
	return -1
}

// config is a provider configuration of plain strings.
func config(values map[string]string) resource.PropertyMap {
	m := resource.PropertyMap{}
	for k, v := range values {
		m[resource.PropertyKey(k)] = resource.NewStringProperty(v)
	}
	return m
}
