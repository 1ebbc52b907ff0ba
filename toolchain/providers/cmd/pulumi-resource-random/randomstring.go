package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

const (
	lowerChars   = "abcdefghijklmnopqrstuvwxyz"
	upperChars   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	numericChars = "0123456789"
	// Upstream's default special set.
	specialChars = "!@#$%&*()-_=+[]{}<>:?"
)

type randomString struct{}

// Upstream marks every argument RequiresReplace: a random value never changes in place.
func (randomString) ReplaceKeys() []string {
	return []string{"keepers", "length", "lower", "minLower", "minNumeric", "minSpecial", "minUpper", "number", "numeric", "overrideSpecial", "special", "upper"}
}

func (randomString) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	out := news.Copy()
	for _, key := range []resource.PropertyKey{"lower", "upper", "special", "numeric"} {
		if _, ok := out[key]; !ok {
			out[key] = resource.NewBoolProperty(true)
		}
	}
	// `number` is upstream's deprecated alias of `numeric`; both are kept in state.
	if _, ok := out["number"]; !ok {
		out["number"] = out["numeric"]
	}
	for _, key := range []resource.PropertyKey{"minLower", "minUpper", "minNumeric", "minSpecial"} {
		if _, ok := out[key]; !ok {
			out[key] = resource.NewNumberProperty(0)
		}
	}
	length, ok := out["length"]
	if !ok {
		return nil, []*pulumirpc.CheckFailure{nativeprovider.Failure("length", "length is required")}
	}
	if length.IsNumber() && length.NumberValue() < 1 {
		return nil, []*pulumirpc.CheckFailure{nativeprovider.Failure("length", "length must be at least 1")}
	}
	return out, nil
}

func (r randomString) Create(_ context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview || inputs.ContainsUnknowns() {
		outs["result"] = resource.MakeComputed(resource.NewStringProperty(""))
		return "", outs, nil
	}
	result, err := generate(inputs)
	if err != nil {
		return "", nil, err
	}
	outs["result"] = resource.NewStringProperty(result)
	return result, outs, nil
}

// Update only happens for changes no input causes (all replace); keep the value.
func (randomString) Update(_ context.Context, _ string, olds, inputs resource.PropertyMap, _ bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	outs["result"] = olds["result"]
	return outs, nil
}

// generate draws the string as upstream does: the minimum counts per class first, the rest from
// the union of enabled classes, then a shuffle.
func generate(inputs resource.PropertyMap) (string, error) {
	special := specialChars
	if v := inputs["overrideSpecial"]; v.IsString() {
		special = v.StringValue()
	}
	type class struct {
		enabled bool
		chars   string
		min     int
	}
	classes := []class{
		{nativeprovider.Bool(inputs, "lower"), lowerChars, int(nativeprovider.Number(inputs, "minLower"))},
		{nativeprovider.Bool(inputs, "upper"), upperChars, int(nativeprovider.Number(inputs, "minUpper"))},
		{nativeprovider.Bool(inputs, "numeric") && nativeprovider.Bool(inputs, "number"), numericChars, int(nativeprovider.Number(inputs, "minNumeric"))},
		{nativeprovider.Bool(inputs, "special"), special, int(nativeprovider.Number(inputs, "minSpecial"))},
	}
	length := int(nativeprovider.Number(inputs, "length"))
	var all string
	var out []byte
	for _, c := range classes {
		if !c.enabled {
			continue
		}
		all += c.chars
		for i := 0; i < c.min; i++ {
			b, err := pick(c.chars)
			if err != nil {
				return "", err
			}
			out = append(out, b)
		}
	}
	if all == "" {
		return "", fmt.Errorf("random string: every character class is disabled")
	}
	for len(out) < length {
		b, err := pick(all)
		if err != nil {
			return "", err
		}
		out = append(out, b)
	}
	for i := len(out) - 1; i > 0; i-- {
		j, err := rand.Int(rand.Reader, big.NewInt(int64(i+1)))
		if err != nil {
			return "", err
		}
		out[i], out[j.Int64()] = out[j.Int64()], out[i]
	}
	return string(out), nil
}

func pick(chars string) (byte, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(chars))))
	if err != nil {
		return 0, err
	}
	return chars[n.Int64()], nil
}
