package nativeprovider

import (
	"context"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// engineLog sends a resource's messages to the engine, which shows them under the resource (as
// `pulumi up` shows upstream providers' output). The engine's address is the plugin's argument.
type engineLog struct {
	client pulumirpc.EngineClient
}

// dialEngine connects to the engine at the plugin's last argument (the engine passes its flags,
// such as `--tracing <endpoint>`, before it); nil without one (a provider started by hand), and
// then messages are dropped.
func dialEngine(args []string) *engineLog {
	address := engineAddress(args)
	if address == "" {
		return nil
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil
	}
	return &engineLog{client: pulumirpc.NewEngineClient(conn)}
}

// engineAddress is the last argument unless it is a flag or a flag's value.
func engineAddress(args []string) string {
	if len(args) == 0 {
		return ""
	}
	last := args[len(args)-1]
	if strings.HasPrefix(last, "-") || (len(args) > 1 && args[len(args)-2] == "--tracing") {
		return ""
	}
	return last
}

type logTarget struct {
	log *engineLog
	urn string
}

type logTargetKey struct{}

// withLogTarget lets Log calls under ctx reach the engine, attributed to the resource urn.
func withLogTarget(ctx context.Context, log *engineLog, urn string) context.Context {
	if log == nil {
		return ctx
	}
	return context.WithValue(ctx, logTargetKey{}, logTarget{log: log, urn: urn})
}

// Log shows message under the resource the call is for (an info diagnostic); a failure to
// deliver it is not the resource's failure.
func Log(ctx context.Context, message string) { send(ctx, pulumirpc.LogSeverity_INFO, message) }

// Warn shows message under the resource as a warning, as upstream providers report a deprecation.
func Warn(ctx context.Context, message string) { send(ctx, pulumirpc.LogSeverity_WARNING, message) }

func send(ctx context.Context, severity pulumirpc.LogSeverity, message string) {
	target, ok := ctx.Value(logTargetKey{}).(logTarget)
	if !ok {
		return
	}
	_, _ = target.log.client.Log(ctx, &pulumirpc.LogRequest{Severity: severity, Message: message, Urn: target.urn})
}
