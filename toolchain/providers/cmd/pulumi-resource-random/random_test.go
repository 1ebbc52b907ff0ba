package main

import (
	"context"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"golang.org/x/crypto/bcrypt"
)

func checked(t *testing.T, inputs resource.PropertyMap) resource.PropertyMap {
	t.Helper()
	news, failures := randomString{}.Check(inputs)
	if len(failures) != 0 {
		t.Fatalf("check: %v", failures)
	}
	return news
}

// terraform-provider-random v3.9.0 (internal/provider/resource_string.go): the id is the value and
// every argument requires replacement.
func TestRandomStringIsItsIDAndEveryInputReplaces(t *testing.T) {
	inputs := checked(t, resource.PropertyMap{"length": resource.NewNumberProperty(16), "special": resource.NewBoolProperty(false)})
	id, outs, err := randomString{}.Create(context.Background(), inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	if result := outs["result"]; result.IsSecret() || result.StringValue() != id || len(id) != 16 {
		t.Fatalf("id %q, result %v", id, result)
	}
	for _, key := range []string{"keepers", "length", "lower", "minLower", "minNumeric", "minSpecial", "minUpper", "number", "numeric", "overrideSpecial", "special", "upper"} {
		if !slices.Contains(randomString{}.ReplaceKeys(), key) {
			t.Errorf("%s does not replace", key)
		}
	}
}

// resource_password.go: the id is the constant "none", and result and bcrypt_hash are sensitive
// (secret outputs through the bridge).
func TestRandomPasswordHidesItsValue(t *testing.T) {
	inputs := checked(t, resource.PropertyMap{"length": resource.NewNumberProperty(20)})
	id, outs, err := randomPassword{}.Create(context.Background(), inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	if id != "none" || !outs["result"].IsSecret() || !outs["bcryptHash"].IsSecret() {
		t.Fatalf("id %q, result secret %v, bcryptHash secret %v", id, outs["result"].IsSecret(), outs["bcryptHash"].IsSecret())
	}
	password := outs["result"].SecretValue().Element.StringValue()
	if err := bcrypt.CompareHashAndPassword([]byte(outs["bcryptHash"].SecretValue().Element.StringValue()), []byte(password)); err != nil {
		t.Fatalf("bcryptHash does not match result: %v", err)
	}
}
