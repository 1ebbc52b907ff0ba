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
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil/rpcerror"
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
	Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error)
	// Update recomputes outputs for an in-place change of non-replacing inputs.
	Update(ctx context.Context, id string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error)
}

// Deleter is a Resource that exists outside the state (a cloud object) and must be removed there.
type Deleter interface {
	Delete(ctx context.Context, id string, olds resource.PropertyMap) error
}

// Reader is a Resource whose refresh reads the real object. exists is false when it is gone.
type Reader interface {
	Read(ctx context.Context, id string, olds resource.PropertyMap) (outputs resource.PropertyMap, exists bool, err error)
}

// InputRefresher is a Reader whose refresh also brings the inputs it manages up to what it read,
// so that the next Diff (which compares old inputs with the program's) sees drift made outside
// Pulumi and the update repairs it. Without it a refresh changes only the outputs, and the drift
// stays invisible to every later up.
type InputRefresher interface {
	RefreshInputs(oldInputs, outputs resource.PropertyMap) resource.PropertyMap
}

// Invoke is a provider function (a data source such as getNetwork).
type Invoke func(ctx context.Context, args resource.PropertyMap) (resource.PropertyMap, error)

// Provider is a named set of resource types.
type Provider struct {
	Name      string
	Version   string
	Resources map[string]Resource // by type token, e.g. "random:index/randomString:RandomString"
	Invokes   map[string]Invoke   // by function token, e.g. "hcloud:index/getNetwork:getNetwork"
	// Configure receives the provider's configuration (`<name>:<key>` values, secrets included);
	// a returned error fails the run with it.
	Configure func(config resource.PropertyMap) error
}

// Serve starts the gRPC server, prints the port for the engine and blocks.
func Serve(p Provider) {
	srv := &server{provider: p, log: dialEngine(os.Args[1:])}
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
	log      *engineLog
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

func (s *server) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	if s.provider.Configure != nil {
		config, err := configuration(req)
		if err != nil {
			return nil, err
		}
		if err := s.provider.Configure(config); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %v", s.provider.Name, err)
		}
	}
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true}, nil
}

// configuration prefers the structured args (secrets kept as secrets); older engines send only the
// flat `<pkg>:config:<key>` variables.
func configuration(req *pulumirpc.ConfigureRequest) (resource.PropertyMap, error) {
	if req.GetArgs() != nil {
		return unmarshal(req.GetArgs())
	}
	config := resource.PropertyMap{}
	for k, v := range req.GetVariables() {
		key := k
		if i := strings.LastIndex(k, ":"); i >= 0 {
			key = k[i+1:]
		}
		config[resource.PropertyKey(key)] = resource.NewStringProperty(v)
	}
	return config, nil
}

func (s *server) Invoke(ctx context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	invoke, ok := s.provider.Invokes[req.GetTok()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "%s: unknown function %q", s.provider.Name, req.GetTok())
	}
	args, err := unmarshal(req.GetArgs())
	if err != nil {
		return nil, err
	}
	result, err := invoke(ctx, args)
	if err != nil {
		// A failed look-up is a failure of the program's call, reported with the function's name.
		return &pulumirpc.InvokeResponse{Failures: []*pulumirpc.CheckFailure{{Reason: fmt.Sprintf("%s: %v", req.GetTok(), err)}}}, nil
	}
	out, err := marshal(result)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.InvokeResponse{Return: out}, nil
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
		Changes:             pulumirpc.DiffResponse_DIFF_SOME,
		Diffs:               changed,
		Replaces:            replaces,
		DeleteBeforeReplace: len(replaces) > 0 && deleteBeforeReplace(r, news),
		DetailedDiff:        detailed,
		HasDetailedDiff:     true,
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

func (s *server) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	inputs, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(withLogTarget(ctx, s.log, req.GetUrn()), req.GetTimeout())
	defer cancel()
	id, outs, err := r.Create(ctx, inputs, req.GetPreview())
	if err != nil {
		return nil, initFailed(id, outs, timedOut(ctx, "create", req.GetTimeout(), err))
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: props}, nil
}

func (s *server) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
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
	ctx, cancel := withTimeout(withLogTarget(ctx, s.log, req.GetUrn()), req.GetTimeout())
	defer cancel()
	outs, err := r.Update(ctx, req.GetId(), olds, news, req.GetPreview())
	if err != nil {
		return nil, initFailed(req.GetId(), outs, timedOut(ctx, "update", req.GetTimeout(), err))
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: props}, nil
}

// Read refreshes a Reader from the real object; other resources live only in the state, so their
// refresh returns what was recorded.
func (s *server) Read(ctx context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	reader, ok := r.(Reader)
	if !ok {
		return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
	}
	olds, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	outs, exists, err := reader.Read(ctx, req.GetId(), olds)
	if err != nil {
		return nil, err
	}
	if !exists {
		return &pulumirpc.ReadResponse{}, nil // an empty id tells the engine the resource is gone
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	inputs := req.GetInputs()
	if refresher, ok := r.(InputRefresher); ok && inputs != nil {
		oldInputs, err := unmarshal(inputs)
		if err != nil {
			return nil, err
		}
		if inputs, err = marshal(refresher.RefreshInputs(oldInputs, outs)); err != nil {
			return nil, err
		}
	}
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: props, Inputs: inputs}, nil
}

func (s *server) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	r, err := s.resource(req.GetUrn())
	if err != nil {
		return nil, err
	}
	if deleter, ok := r.(Deleter); ok {
		olds, err := unmarshal(req.GetProperties())
		if err != nil {
			return nil, err
		}
		ctx, cancel := withTimeout(withLogTarget(ctx, s.log, req.GetUrn()), req.GetTimeout())
		defer cancel()
		if err := deleter.Delete(ctx, req.GetId(), olds); err != nil {
			return nil, timedOut(ctx, "delete", req.GetTimeout(), err)
		}
	}
	return &emptypb.Empty{}, nil
}

// initFailed reports a failure after the object came into existence (a create whose action failed):
// with the id the engine records the resource, so the next run retries or deletes it instead of
// orphaning it and tripping over its name.
func initFailed(id string, outs resource.PropertyMap, err error) error {
	if id == "" || outs == nil {
		return err
	}
	props, marshalErr := marshal(outs)
	if marshalErr != nil {
		return err
	}
	return rpcerror.WithDetails(rpcerror.New(codes.Unknown, err.Error()), &pulumirpc.ErrorResourceInitFailed{
		Id: id, Properties: props, Reasons: []string{err.Error()},
	})
}

// Failure builds a check failure naming the property and the rule.
func Failure(property, reason string) *pulumirpc.CheckFailure {
	return &pulumirpc.CheckFailure{Property: property, Reason: reason}
}
