package main

import (
	"crypto/sha1"
	"encoding/base64"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func TestServerStateKeepsUserDataAsItsHash(t *testing.T) {
	text := "#cloud-config\nhostname: w1\n"
	sum := sha1.Sum([]byte(text))
	want := base64.StdEncoding.EncodeToString(sum[:])

	inputs := resource.PropertyMap{"name": resource.NewStringProperty("w1"), "userData": resource.MakeSecret(resource.NewStringProperty(text))}
	outs := serverState(inputs)
	got := outs["userData"]
	if !got.IsSecret() || got.SecretValue().Element.StringValue() != want {
		t.Fatalf("userData output = %v, want the secret %q", got, want)
	}
	if inputs["userData"].SecretValue().Element.StringValue() != text {
		t.Fatal("the inputs were changed; the diff compares them")
	}
	if outs["name"].StringValue() != "w1" {
		t.Fatalf("other outputs changed: %v", outs["name"])
	}

	plain := serverState(resource.PropertyMap{"userData": resource.NewStringProperty(text)})["userData"]
	if plain.IsSecret() || plain.StringValue() != want {
		t.Fatalf("plain userData output = %v, want %q", plain, want)
	}
	if _, ok := serverState(resource.PropertyMap{})["userData"]; ok {
		t.Fatal("a server without user data gained one")
	}
	if again := serverState(outs)["userData"]; again.SecretValue().Element.StringValue() != want {
		t.Fatalf("a recorded hash was hashed again: %v", again)
	}
	unknown := serverState(resource.PropertyMap{"userData": resource.MakeComputed(resource.NewStringProperty(""))})["userData"]
	if !unknown.ContainsUnknowns() {
		t.Fatalf("an unknown user data (preview) became %v", unknown)
	}
}
