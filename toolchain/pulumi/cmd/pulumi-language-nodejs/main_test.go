package main

import (
	"reflect"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

func programWith(t *testing.T, options map[string]any) *pulumirpc.ProgramInfo {
	t.Helper()
	s, err := structpb.NewStruct(options)
	if err != nil {
		t.Fatal(err)
	}
	return &pulumirpc.ProgramInfo{Options: s}
}

// As upstream's host: nodeargs split as a shell would (the old host split on spaces, breaking a
// quoted path), and an option of the wrong type is an error (the old host ignored it).
func TestRuntimeOptionsFollowUpstream(t *testing.T) {
	got, err := runtimeOptions(programWith(t, map[string]any{"nodeargs": `--require "./my hooks.js" --max-old-space-size=4096`, "typescript": false, "tsconfig": "tsconfig.pulumi.json"}))
	if err != nil {
		t.Fatal(err)
	}
	want := nodeRuntimeOptions{typescript: false, tsconfig: "tsconfig.pulumi.json", nodeArgs: []string{"--require", "./my hooks.js", "--max-old-space-size=4096"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("options = %+v, want %+v", got, want)
	}
	if defaults, err := runtimeOptions(nil); err != nil || !defaults.typescript {
		t.Fatalf("typescript defaults to true: %+v, %v", defaults, err)
	}
	for _, bad := range []map[string]any{{"typescript": "false"}, {"tsconfig": true}, {"nodeargs": 3.0}} {
		if _, err := runtimeOptions(programWith(t, bad)); err == nil {
			t.Errorf("%v: want an error, as upstream", bad)
		}
	}
}
