package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// recordingAPI answers the Hetzner API calls a test names ("METHOD /path") and records every request, so
// a test pins the call sequence the double makes.
type recordingAPI struct {
	mu       sync.Mutex
	routes   map[string]func(body []byte) (int, any)
	requests []string
	bodies   map[string][]byte
}

func newRecordingAPI(t *testing.T, routes map[string]func(body []byte) (int, any)) (*recordingAPI, *cloud) {
	t.Helper()
	f := &recordingAPI{routes: routes, bodies: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.Path
		f.mu.Lock()
		f.requests = append(f.requests, key)
		f.bodies[key] = body
		route := f.routes[key]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if route == nil {
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = w.Write([]byte(`{"error":{"code":"not_implemented","message":"` + key + `"}}`))
			return
		}
		status, answer := route(body)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	c := &cloud{}
	if err := c.configure(resource.PropertyMap{
		"token":        resource.NewStringProperty(strings.Repeat("t", 64)),
		"endpoint":     resource.NewStringProperty(srv.URL),
		"pollFunction": resource.NewStringProperty("constant"),
		"pollInterval": resource.NewStringProperty("1ms"),
	}); err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *recordingAPI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func recordedError(code hcloud.ErrorCode) map[string]any {
	return map[string]any{"error": map[string]any{"code": string(code), "message": string(code)}}
}

func doneAction(id int64, command string) map[string]any {
	return map[string]any{"id": id, "command": command, "status": "success", "progress": 100, "started": "2026-01-01T00:00:00Z", "resources": []any{}}
}
