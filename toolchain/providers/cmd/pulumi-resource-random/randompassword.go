package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/bcrypt"
)

// randomPassword is RandomString whose value stays secret: upstream's id is the constant "none"
// (never the value), and `result` and `bcryptHash` are secret outputs.
type randomPassword struct{ randomString }

func (r randomPassword) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	_, outs, err := r.randomString.Create(ctx, inputs, preview)
	if err != nil || preview || outs["result"].IsComputed() {
		if outs != nil {
			outs["bcryptHash"] = resource.MakeComputed(resource.NewStringProperty(""))
		}
		return "", outs, err
	}
	result := outs["result"].StringValue()
	hash, err := bcrypt.GenerateFromPassword([]byte(result), bcrypt.DefaultCost)
	if err != nil {
		return "", nil, err
	}
	outs["result"] = resource.MakeSecret(resource.NewStringProperty(result))
	outs["bcryptHash"] = resource.MakeSecret(resource.NewStringProperty(string(hash)))
	return "none", outs, nil
}

// Update keeps the value and its hash (every input replaces, as for RandomString).
func (randomPassword) Update(_ context.Context, _ string, olds, inputs resource.PropertyMap, _ bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	outs["result"] = olds["result"]
	outs["bcryptHash"] = olds["bcryptHash"]
	return outs, nil
}
