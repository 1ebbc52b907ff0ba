package main

import (
	"context"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// terraform-provider-time v0.12.1 (internal/provider/resource_time_offset.go): the base time is
// fixed at create (now, or baseRfc3339), only triggers replace, a changed offset updates in place
// from the same base and a new baseRfc3339 updates in place from the new one (the old double replaced).
func TestOffsetKeepsItsBaseAndUpdatesOffsetsInPlace(t *testing.T) {
	if keys := (offset{}).ReplaceKeys(); !slices.Equal(keys, []string{"triggers"}) {
		t.Fatalf("replace keys %v", keys)
	}
	inputs := resource.PropertyMap{"baseRfc3339": resource.NewStringProperty("2026-01-31T10:00:00Z"), "offsetMonths": resource.NewNumberProperty(1)}
	if _, failures := (offset{}).Check(inputs); len(failures) != 0 {
		t.Fatal(failures)
	}
	id, outs, err := offset{}.Create(context.Background(), inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	if id != "2026-01-31T10:00:00Z" || outs["rfc3339"].StringValue() != "2026-03-03T10:00:00Z" {
		t.Fatalf("id %q, rfc3339 %v", id, outs["rfc3339"])
	}
	news := resource.PropertyMap{"offsetHours": resource.NewNumberProperty(2)}
	updated, err := offset{}.Update(context.Background(), id, outs, news, false)
	if err != nil {
		t.Fatal(err)
	}
	if updated["baseRfc3339"].StringValue() != "2026-01-31T10:00:00Z" || updated["rfc3339"].StringValue() != "2026-01-31T12:00:00Z" {
		t.Fatalf("update: base %v, rfc3339 %v", updated["baseRfc3339"], updated["rfc3339"])
	}
	rebased, err := offset{}.Update(context.Background(), id, updated, resource.PropertyMap{"baseRfc3339": resource.NewStringProperty("2026-06-01T00:00:00Z"), "offsetHours": resource.NewNumberProperty(2)}, false)
	if err != nil || rebased["rfc3339"].StringValue() != "2026-06-01T02:00:00Z" {
		t.Fatalf("a new base: %v, %v", rebased["rfc3339"], err)
	}
	if _, failures := (offset{}).Check(resource.PropertyMap{}); len(failures) == 0 {
		t.Fatal("an offset without any offset* argument is refused")
	}
}
