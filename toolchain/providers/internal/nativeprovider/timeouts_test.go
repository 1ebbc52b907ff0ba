package nativeprovider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// slowResource's create, update and delete wait for their context: only a deadline ends them.
type slowResource struct{ fakeResource }

func (slowResource) Create(ctx context.Context, _ resource.PropertyMap, _ bool) (string, resource.PropertyMap, error) {
	<-ctx.Done()
	return "", nil, ctx.Err()
}

func (slowResource) Update(ctx context.Context, _ string, _, _ resource.PropertyMap, _ bool) (resource.PropertyMap, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (slowResource) Delete(ctx context.Context, _ string, _ resource.PropertyMap) error {
	<-ctx.Done()
	return ctx.Err()
}

// customTimeouts reach the provider as the request's timeout, in seconds; each bounds its operation.
func TestCustomTimeoutsBoundCreateUpdateAndDelete(t *testing.T) {
	s := &server{provider: Provider{Name: "test", Resources: map[string]Resource{testType: slowResource{}}}}
	urn := "urn:pulumi:dev::p::" + testType + "::x"
	props, _ := structpb.NewStruct(map[string]any{"image": "x"})
	const timeout = 0.05
	calls := map[string]func(ctx context.Context) error{
		"create": func(ctx context.Context) error {
			_, err := s.Create(ctx, &pulumirpc.CreateRequest{Urn: urn, Properties: props, Timeout: timeout})
			return err
		},
		"update": func(ctx context.Context) error {
			_, err := s.Update(ctx, &pulumirpc.UpdateRequest{Urn: urn, Id: "1", Olds: props, News: props, Timeout: timeout})
			return err
		},
		"delete": func(ctx context.Context) error {
			_, err := s.Delete(ctx, &pulumirpc.DeleteRequest{Urn: urn, Id: "1", Properties: props, Timeout: timeout})
			return err
		},
	}
	for op, call := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		started := time.Now()
		err := call(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "customTimeouts."+op+" (50ms)") {
			t.Errorf("%s: error %v, want one naming customTimeouts.%s (50ms)", op, err, op)
		}
		if elapsed := time.Since(started); elapsed > 2*time.Second {
			t.Errorf("%s: took %v, not bounded by the 50ms timeout", op, elapsed)
		}
	}
}
