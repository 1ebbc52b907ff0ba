package nativeprovider

import (
	"context"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// fakeResource replaces on `image`; named says whether it declares a name input.
type fakeResource struct{ named bool }

func (fakeResource) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	return news, nil
}
func (fakeResource) ReplaceKeys() []string { return []string{"image"} }
func (fakeResource) Create(context.Context, resource.PropertyMap, bool) (string, resource.PropertyMap, error) {
	return "", nil, nil
}
func (fakeResource) Update(context.Context, string, resource.PropertyMap, resource.PropertyMap, bool) (resource.PropertyMap, error) {
	return nil, nil
}

type namedResource struct{ fakeResource }

func (namedResource) NameKey() string { return "name" }

const testType = "test:index/thing:Thing"

func diffOf(t *testing.T, r Resource, olds, news map[string]any) *pulumirpc.DiffResponse {
	t.Helper()
	s := &server{provider: Provider{Name: "test", Resources: map[string]Resource{testType: r}}}
	o, err := structpb.NewStruct(olds)
	if err != nil {
		t.Fatal(err)
	}
	n, err := structpb.NewStruct(news)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Diff(context.Background(), &pulumirpc.DiffRequest{Urn: "urn:pulumi:dev::p::" + testType + "::x", OldInputs: o, News: n})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The bridge's rule: a replacement of an object named explicitly deletes the old one first.
func TestDiffDeletesBeforeReplacingAnExplicitlyNamedObject(t *testing.T) {
	named := namedResource{}
	cases := []struct {
		what       string
		r          Resource
		olds, news map[string]any
		replace    bool
		dbr        bool
	}{
		{"replaced, same explicit name", named, map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "a", "image": "y"}, true, true},
		{"replaced, explicit name changed too", named, map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "b", "image": "y"}, true, true},
		{"updated in place", named, map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "b", "image": "x"}, false, false},
		{"replaced without a name", named, map[string]any{"image": "x"}, map[string]any{"image": "y"}, true, false},
		{"replaced, a type without a name input", fakeResource{}, map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "a", "image": "y"}, true, false},
	}
	for _, c := range cases {
		resp := diffOf(t, c.r, c.olds, c.news)
		if got := len(resp.GetReplaces()) > 0; got != c.replace {
			t.Errorf("%s: replaces = %v, want a replacement: %v", c.what, resp.GetReplaces(), c.replace)
		}
		if resp.GetDeleteBeforeReplace() != c.dbr {
			t.Errorf("%s: deleteBeforeReplace = %v, want %v", c.what, resp.GetDeleteBeforeReplace(), c.dbr)
		}
	}
}
