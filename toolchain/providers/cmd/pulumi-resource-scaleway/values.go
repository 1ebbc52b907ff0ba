package main

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidPattern.MatchString(s) }

func bareIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, bareID(id))
	}
	return out
}

// optional is the input's string, nil when it is absent or empty (upstream ExpandStringPtr).
func optional(inputs resource.PropertyMap, key string) *string {
	if v := nativeprovider.String(inputs, key); v != "" {
		return &v
	}
	return nil
}

// generatedName is upstream's name for an object the program did not name (types.ExpandOrGenerateString:
// the prefix and a random suffix).
func generatedName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

func arrayOf(values []resource.PropertyValue) resource.PropertyValue {
	if values == nil {
		values = []resource.PropertyValue{}
	}
	return resource.NewArrayProperty(values)
}
