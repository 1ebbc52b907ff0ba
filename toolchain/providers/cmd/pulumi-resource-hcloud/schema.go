package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// resourceSchema is what --dump-schema reports of one resource, for the conformance test against
// the installed @pulumi/hcloud SDK (test/toolchain/doubleConformance.test.ts). Both fields are
// computed from the resource itself, so they cannot drift from what it does: replaceKeys is its
// ReplaceKeys, required the properties its Check refuses an empty input for.
type resourceSchema struct {
	ReplaceKeys []string `json:"replaceKeys"`
	Required    []string `json:"required"`
}

func dumpSchema(out io.Writer, resources map[string]nativeprovider.Resource) error {
	schema := map[string]resourceSchema{}
	for token, r := range resources {
		_, failures := r.Check(resource.PropertyMap{})
		required := []string{}
		for _, f := range failures {
			// A failure names a property path (rules[0].port, labels.x); the input is its first segment.
			name, _, _ := strings.Cut(strings.SplitN(f.GetProperty(), "[", 2)[0], ".")
			if !slices.Contains(required, name) {
				required = append(required, name)
			}
		}
		slices.Sort(required)
		keys := append([]string{}, r.ReplaceKeys()...)
		slices.Sort(keys)
		schema[token] = resourceSchema{ReplaceKeys: keys, Required: required}
	}
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	return encoder.Encode(schema)
}
