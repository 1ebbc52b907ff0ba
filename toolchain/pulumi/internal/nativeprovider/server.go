// Package nativeprovider serves small Pulumi resource providers written for nodefleet's toolchain:
// the upstream provider modules the program's npm SDKs ask for are not served by the Go module
// proxy, so these implement the few resources the program declares, with upstream's type tokens,
// property names and replacement rules, over the real provider gRPC protocol the engine speaks.
package nativeprovider

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Resource is one resource type of a provider. Inputs and outputs are Pulumi property maps.
type Resource interface {
	// Check fills defaults and validates; failures name the property and the rule.
	Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure)
	// ReplaceKeys are the input keys whose change forces a new resource.
	ReplaceKeys() []string
	// Create returns the id and outputs; in a preview, outputs that are not yet known are Computed.
	Create(inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error)
	// Update recomputes outputs for an in-place change of non-replacing inputs.
	Update(id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error)
}

// Provider is a named set of resource types.
type Provider struct {
	Name      string
	Version   string
	Resources map[string]Resource // by type token, e.g. "random:index/randomString:RandomString"
}

// Serve starts the gRPC server, prints the port for the engine and blocks.
func Serve(p Provider) {
	srv := &server{provider: p}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(s, srv)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-%s: %v\n", p.Name, err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-%s: %v\n", p.Name, err)
		os.Exit(1)
	}
}

type server struct {
	pulumirpc.UnimplementedResourceProviderServer
	provider Provider
}

var marshalOptions = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, SkipNulls: true, KeepOutputValues: false}

func unmarshal(s *structpb.Struct) (resource.PropertyMap, error) {
	return plugin.UnmarshalProperties(s, marshalOptions)
}

func marshal(m resource.PropertyMap) (*structpb.Struct, error) {
	return plugin.MarshalProperties(m, marshalOptions)
}

func (s *server) resource(urn string) (Resource, error) {
	token := string(resource.URN(urn).Type())
	r, ok := s.provider.Resources[token]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "%s: unknown resource type %q", s.provider.Name, token)
	}
	return r, nil
}

func (s *server) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: s.provider.Version}, nil
}

func (s *server) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":%q,"version":%q}`, s.provider.Name, s.provider.Version)}, nil
}

func (s *server) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (s *server) DiffConfig(context.Context, *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
}

func (s *server) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true}, nil
}

func (s *server) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (s *server) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	checked, failures := r.Check(news)
	if len(failures) > 0 {
		return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: failures}, nil
	}
	inputs, err := marshal(checked)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CheckResponse{Inputs: inputs}, nil
}

func (s *server) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	oldStruct := req.GetOldInputs()
	if oldStruct == nil {
		oldStruct = req.GetOlds()
	}
	olds, err := unmarshal(oldStruct)
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	changed := changedKeys(olds, news)
	if len(changed) == 0 {
		return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
	}
	replaceSet := map[string]bool{}
	for _, k := range r.ReplaceKeys() {
		replaceSet[k] = true
	}
	detailed := map[string]*pulumirpc.PropertyDiff{}
	var replaces []string
	for _, k := range changed {
		kind := pulumirpc.PropertyDiff_UPDATE
		if replaceSet[k] {
			kind = pulumirpc.PropertyDiff_UPDATE_REPLACE
			replaces = append(replaces, k)
		}
		detailed[k] = &pulumirpc.PropertyDiff{Kind: kind, InputDiff: true}
	}
	return &pulumirpc.DiffResponse{
		Changes:         pulumirpc.DiffResponse_DIFF_SOME,
		Diffs:           changed,
		Replaces:        replaces,
		DetailedDiff:    detailed,
		HasDetailedDiff: true,
	}, nil
}

// changedKeys compares inputs by value, ignoring secretness (a value that became secret is not a change).
func changedKeys(olds, news resource.PropertyMap) []string {
	keys := map[resource.PropertyKey]bool{}
	for k := range olds {
		keys[k] = true
	}
	for k := range news {
		keys[k] = true
	}
	var changed []string
	for k := range keys {
		o, n := olds[k], news[k]
		if n.ContainsUnknowns() || !plain(o).DeepEquals(plain(n)) {
			changed = append(changed, string(k))
		}
	}
	sort.Strings(changed)
	return changed
}

func plain(v resource.PropertyValue) resource.PropertyValue {
	for v.IsSecret() {
		v = v.SecretValue().Element
	}
	return v
}

func (s *server) Create(_ context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	inputs, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	id, outs, err := r.Create(inputs, req.GetPreview())
	if err != nil {
		return nil, err
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: props}, nil
}

func (s *server) Update(_ context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds())
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	outs, err := r.Update(req.GetId(), olds, news, req.GetPreview())
	if err != nil {
		return nil, err
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: props}, nil
}

// Read returns the recorded state: these resources live only in the state, so a refresh changes nothing.
func (s *server) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (s *server) Delete(context.Context, *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// Failure builds a check failure naming the property and the rule.
func Failure(property, reason string) *pulumirpc.CheckFailure {
	return &pulumirpc.CheckFailure{Property: property, Reason: reason}
}
