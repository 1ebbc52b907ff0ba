package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// snapshotAPI lists three snapshots labelled role=node, two x86 (ids 1 older, 2 newer) and one arm
// (id 3), filtering by label_selector (only "role=node" matches) and architecture as Hetzner does.
func snapshotAPI(t *testing.T, queries *[]string) *cloud {
	t.Helper()
	all := []map[string]any{
		{"id": 1, "type": "snapshot", "architecture": "x86", "created": "2026-01-01T00:00:00Z", "labels": map[string]string{"role": "node"}},
		{"id": 2, "type": "snapshot", "architecture": "x86", "created": "2026-02-01T00:00:00Z", "labels": map[string]string{"role": "node"}},
		{"id": 3, "type": "snapshot", "architecture": "arm", "created": "2026-01-15T00:00:00Z", "labels": map[string]string{"role": "node"}},
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		*queries = append(*queries, r.URL.RawQuery)
		images := []map[string]any{}
		for _, i := range all {
			if q.Get("label_selector") == "role=node" && (q.Get("architecture") == "" || q.Get("architecture") == i["architecture"]) {
				images = append(images, i)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"images": images, "meta": map[string]any{"pagination": map[string]any{"page": 1, "per_page": 50, "last_page": 1, "total_entries": len(images)}}})
	}))
	t.Cleanup(api.Close)
	return &cloud{client: hcloud.NewClient(hcloud.WithEndpoint(api.URL), hcloud.WithToken("t"))}
}

// Upstream's rules: a selector looks among one architecture's images (x86 unless withArchitecture
// says otherwise); several matches need mostRecent, which picks the newest created; none is an error.
func TestGetImageBySelectorPicksTheNewestOfTheArchitecture(t *testing.T) {
	var queries []string
	c := snapshotAPI(t, &queries)
	ctx := context.Background()
	args := func(kv map[string]any) resource.PropertyMap { return resource.NewPropertyMapFromMap(kv) }

	out, err := c.getImage(ctx, args(map[string]any{"withSelector": "role=node", "mostRecent": true}))
	if err != nil {
		t.Fatal(err)
	}
	if got := out["id"].NumberValue(); got != 2 {
		t.Errorf("x86 (the default) newest: got id %v, want 2", got)
	}
	if !strings.Contains(queries[0], "architecture=x86") {
		t.Errorf("the selector's list asks for x86 images: %s", queries[0])
	}
	out, err = c.getImage(ctx, args(map[string]any{"withSelector": "role=node", "mostRecent": true, "withArchitecture": "arm"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, arch := out["id"].NumberValue(), out["architecture"].StringValue(); got != 3 || arch != "arm" {
		t.Errorf("arm: got id %v (%s), want 3 (arm)", got, arch)
	}
	if _, err := c.getImage(ctx, args(map[string]any{"withSelector": "role=node"})); err == nil || !strings.Contains(err.Error(), "mostRecent") {
		t.Errorf("two x86 matches without mostRecent: want an error naming mostRecent, got %v", err)
	}
	if _, err := c.getImage(ctx, args(map[string]any{"withSelector": "role=other", "mostRecent": true})); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("no match: want an error, got %v", err)
	}
}
