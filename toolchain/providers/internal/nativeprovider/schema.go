package nativeprovider

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// ResourceSchema is what a double's --dump-schema reports of one resource, for the conformance
// test against the installed npm SDK (test/toolchain/doubleConformance.test.ts). Both fields are
// computed from the resource itself, so they cannot drift from what it does: ReplaceKeys is its
// ReplaceKeys, Required the properties its Check refuses an empty input for.
type ResourceSchema struct {
	ReplaceKeys []string `json:"replaceKeys"`
	Required    []string `json:"required"`
}

// DumpSchema writes every resource's ResourceSchema as JSON, by type token.
func DumpSchema(out io.Writer, resources map[string]Resource) error {
	schema := map[string]ResourceSchema{}
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
		schema[token] = ResourceSchema{ReplaceKeys: keys, Required: required}
	}
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	return encoder.Encode(schema)
}
