package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Deleting a server or placement group already gone is upstream's not_found error
// (terraform-provider-hcloud server/resource.go and placementgroup/resource.go, delete): the
// engine keeps the entry until a refresh drops it, so the double must not report success.
func TestDeleteOfAGoneResourceIsNotFound(t *testing.T) {
	gone := func([]byte) (int, any) { return http.StatusNotFound, recordedError(hcloud.ErrorCodeNotFound) }
	_, c := newRecordingAPI(t, map[string]func([]byte) (int, any){
		"DELETE /servers/7":                gone,
		"POST /servers/7/actions/shutdown": gone,
		"DELETE /placement_groups/3":       gone,
	})
	ctx := context.Background()
	if err := (server{c}).Delete(ctx, "7", resource.PropertyMap{}); !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		t.Errorf("server delete of a gone server = %v, want not_found", err)
	}
	olds := resource.PropertyMap{"shutdownBeforeDeletion": resource.NewBoolProperty(true)}
	if err := (server{c}).Delete(ctx, "7", olds); !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		t.Errorf("server delete with shutdown of a gone server = %v, want not_found", err)
	}
	if err := (placementGroup{c}).Delete(ctx, "3", resource.PropertyMap{}); !hcloud.IsError(err, hcloud.ErrorCodeNotFound) {
		t.Errorf("placement group delete of a gone group = %v, want not_found", err)
	}
}

// A refresh of a gone server drops it (upstream's read clears the id on not_found).
func TestReadOfAGoneServerDropsIt(t *testing.T) {
	_, c := newRecordingAPI(t, map[string]func([]byte) (int, any){
		"GET /servers/7": func([]byte) (int, any) { return http.StatusNotFound, recordedError(hcloud.ErrorCodeNotFound) },
	})
	_, exists, err := (server{c}).Read(context.Background(), "7", resource.PropertyMap{})
	if err != nil || exists {
		t.Fatalf("Read of a gone server = exists %v, err %v; want dropped without error", exists, err)
	}
}
