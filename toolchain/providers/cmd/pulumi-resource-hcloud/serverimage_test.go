package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// imageAPI answers the two look-ups of a server create: one arm server type (cax11) and, for the
// arm architecture only, images named "current", "deprecated" (unavailable next year) and "gone"
// (unavailable since last year). It records the requests.
func imageAPI(t *testing.T, requests *[]string) *cloud {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*requests = append(*requests, r.URL.Path+"?"+r.URL.RawQuery)
		q := r.URL.Query()
		reply := map[string]any{}
		switch r.URL.Path {
		case "/server_types":
			reply["server_types"] = []any{}
			if q.Get("name") == "cax11" {
				reply["server_types"] = []any{map[string]any{"id": 45, "name": "cax11", "architecture": "arm"}}
			}
		case "/images":
			var deprecation any
			switch q.Get("name") {
			case "deprecated":
				deprecation = map[string]any{"announced": time.Now().Add(-24 * time.Hour), "unavailable_after": time.Now().AddDate(1, 0, 0)}
			case "gone":
				deprecation = map[string]any{"announced": time.Now().AddDate(-2, 0, 0), "unavailable_after": time.Now().AddDate(-1, 0, 0)}
			}
			reply["images"] = []any{}
			if q.Get("architecture") == "arm" && q.Get("include_deprecated") == "true" {
				reply["images"] = []any{map[string]any{"id": 7, "name": q.Get("name"), "architecture": "arm", "deprecation": deprecation}}
			}
		case "/servers/1/actions/remove_from_placement_group", "/servers/1/actions/poweroff":
			t.Errorf("%s called", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(api.Close)
	return &cloud{client: hcloud.NewClient(hcloud.WithEndpoint(api.URL), hcloud.WithToken("t"))}
}

// Upstream's sequence: the server type for its architecture, then the image by name for it,
// deprecated ones included; a deprecated image still resolves (with a warning), one past its
// unavailability date is refused before the create.
func TestServerImageIsLookedUpForTheTypesArchitecture(t *testing.T) {
	var requests []string
	s := server{imageAPI(t, &requests)}
	ctx := context.Background()
	image, err := s.serverImage(ctx, "cax11", "current")
	if err != nil || image.ID != 7 || image.Architecture != hcloud.ArchitectureARM {
		t.Fatalf("serverImage(cax11, current) = %+v, %v; want the arm image 7", image, err)
	}
	if len(requests) != 2 || !strings.HasPrefix(requests[0], "/server_types?") || !strings.Contains(requests[1], "architecture=arm") {
		t.Errorf("requests = %q, want the server type, then the image for arm", requests)
	}
	if image, err := s.serverImage(ctx, "cax11", "deprecated"); err != nil || image.ID != 7 {
		t.Errorf("a deprecated image: %+v, %v; want it resolved (upstream warns)", image, err)
	}
	if _, err := s.serverImage(ctx, "cax11", "gone"); err == nil || !strings.HasPrefix(err.Error(), "image: ") || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("an unavailable image: %v; want an error on image saying it is unavailable", err)
	}
	if _, err := s.serverImage(ctx, "cx99", "current"); err == nil || !strings.HasPrefix(err.Error(), "serverType: ") {
		t.Errorf("an unknown server type: %v; want an error on serverType", err)
	}
}

// Upstream never powers a server off to move it between placement groups: leaving one while the
// server is not off is refused, and nothing is called.
func TestPlacementGroupChangeOfARunningServerIsRefused(t *testing.T) {
	var requests []string
	s := server{imageAPI(t, &requests)}
	running := &hcloud.Server{ID: 1, Status: hcloud.ServerStatusRunning, PlacementGroup: &hcloud.PlacementGroup{ID: 3}}
	olds := resource.NewPropertyMapFromMap(map[string]any{"placementGroupId": 3})
	news := resource.NewPropertyMapFromMap(map[string]any{"placementGroupId": 4})
	err := s.changePlacementGroup(context.Background(), running, olds, news)
	if err == nil || !strings.HasPrefix(err.Error(), "placementGroupId: ") || !strings.Contains(err.Error(), "powered off") {
		t.Fatalf("changePlacementGroup of a running server = %v, want a refusal on placementGroupId", err)
	}
	if len(requests) != 0 {
		t.Errorf("requests = %q, want none", requests)
	}
}
