package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"nodefleet.dev/toolchain/providers/internal/scriptedapi"
)

// fakeAPI answers the few Hetzner API calls a test scripts (scriptedapi).
type fakeAPI = scriptedapi.API

// newCloud starts the fake and a configured cloud against it, with retries shortened.
func newCloud(t *testing.T, routes scriptedapi.Routes) (*cloud, *fakeAPI) {
	t.Helper()
	f := scriptedapi.Start(t, routes, func(key string) any { return apiError("not_found", "no route "+key) })
	saved := retryBase
	retryBase = time.Millisecond
	t.Cleanup(func() { retryBase = saved })
	t.Setenv("HCLOUD_TOKEN", "")
	c := &cloud{}
	if err := c.configure(config(map[string]string{"token": strings.Repeat("t", 64), "endpoint": f.URL, "pollInterval": "1ms"})); err != nil {
		t.Fatal(err)
	}
	return c, f
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

var count = scriptedapi.Count

var index = scriptedapi.Index

// config is a provider configuration of plain strings.
func config(values map[string]string) resource.PropertyMap {
	m := resource.PropertyMap{}
	for k, v := range values {
		m[resource.PropertyKey(k)] = resource.NewStringProperty(v)
	}
	return m
}
