package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// runner runs one command where a Command resource says (over SSH, or on this machine).
type runner interface {
	// check validates the inputs only this kind of Command has (connection, dir, interpreter).
	check(inputs resource.PropertyMap) []*pulumirpc.CheckFailure
	// run runs script with stdin and the environment, writing its stdout and stderr to out; secret
	// says the script itself is secret (it must not reach a process's arguments).
	run(ctx context.Context, inputs resource.PropertyMap, script string, secret bool, env environment, out *output) error
}

// command is remote.Command or local.Command: the lifecycle is the same, only where it runs differs.
type command struct {
	runner runner
}

var loggingValues = []string{"stdout", "stderr", "stdoutAndStderr", "none"}

// Upstream's SDK also sets replaceOnChanges: ["triggers[*]"]; the provider's own diff agrees.
func (command) ReplaceKeys() []string { return []string{"triggers"} }

func (c command) Check(news resource.PropertyMap) (resource.PropertyMap, []*pulumirpc.CheckFailure) {
	failures := c.runner.check(news)
	// Upstream declares `connection` secret as a whole (it holds the password and private key).
	if v, ok := news["connection"]; ok && !v.ContainsUnknowns() && !v.IsSecret() {
		news["connection"] = resource.MakeSecret(v)
	}
	if v := news["logging"]; v.IsString() && !slices.Contains(loggingValues, v.StringValue()) {
		failures = append(failures, nativeprovider.Failure("logging", fmt.Sprintf("must be one of %s, not %q", strings.Join(loggingValues, ", "), v.StringValue())))
	}
	for _, key := range []string{"assetPaths", "archivePaths"} {
		if nativeprovider.Has(news, key) {
			failures = append(failures, nativeprovider.Failure(key, "is not supported by nodefleet's command provider"))
		}
	}
	if len(failures) > 0 {
		return nil, failures
	}
	return news, nil
}

// Create runs `create` (nothing without one). A failed create is not recorded: the next run creates again.
func (c command) Create(ctx context.Context, inputs resource.PropertyMap, preview bool) (string, resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview || inputs.ContainsUnknowns() {
		nativeprovider.Computed(outs, "stdout", "stderr")
		return "", outs, nil
	}
	id, err := newID()
	if err != nil {
		return "", nil, err
	}
	if err := c.runInto(ctx, outs, "create", nil); err != nil {
		return "", nil, err
	}
	return id, outs, nil
}

// Update runs `update`, else `create`, with the previous run's output in the environment.
func (c command) Update(ctx context.Context, _ string, olds, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	outs := inputs.Copy()
	if preview || inputs.ContainsUnknowns() {
		nativeprovider.Computed(outs, "stdout", "stderr")
		return outs, nil
	}
	key := "update"
	if !nativeprovider.Has(inputs, key) {
		key = "create"
	}
	if err := c.runInto(ctx, outs, key, olds); err != nil {
		return nil, err
	}
	return outs, nil
}

// Delete runs `delete`, with the last run's output in the environment.
func (c command) Delete(ctx context.Context, _ string, olds resource.PropertyMap) error {
	if nativeprovider.String(olds, "delete") == "" {
		return nil
	}
	_, err := c.execute(ctx, olds, "delete", olds)
	return err
}

// runInto runs the script under key and records its output in outs (empty when there is no script).
// stdout and stderr are plain outputs whatever the script saw, as upstream's (its framework makes an
// output secret only when an input of the same name is, and no input is named stdout or stderr): a
// program that needs them secret says so with `additionalSecretOutputs`, which the engine applies.
func (c command) runInto(ctx context.Context, outs resource.PropertyMap, key string, previous resource.PropertyMap) error {
	out := &output{}
	if nativeprovider.String(outs, key) != "" {
		var err error
		if out, err = c.execute(ctx, outs, key, previous); err != nil {
			return err
		}
	}
	outs["stdout"] = resource.NewStringProperty(strings.TrimSuffix(out.stdout(), "\n"))
	outs["stderr"] = resource.NewStringProperty(strings.TrimSuffix(out.stderr(), "\n"))
	return nil
}

// execute runs the script under key, showing the lines of the streams `logging` names (both by
// default) under the resource as status messages as they arrive, whatever the script saw, as upstream
// does. A failure quotes the command and the output (failure.go).
func (c command) execute(ctx context.Context, inputs resource.PropertyMap, key string, previous resource.PropertyMap) (*output, error) {
	logging := nativeprovider.String(inputs, "logging")
	if logging == "" {
		logging = "stdoutAndStderr"
	}
	show := func(line string) { nativeprovider.LogStatus(ctx, line) }
	out := newOutput(show, logging == "stdout" || logging == "stdoutAndStderr", logging == "stderr" || logging == "stdoutAndStderr")
	script := nativeprovider.String(inputs, key)
	secretScript := inputs[resource.PropertyKey(key)].ContainsSecrets()
	err := c.runner.run(ctx, inputs, script, secretScript, environmentOf(inputs, previous), out)
	out.flush()
	if err != nil {
		var failed *scriptError
		if errors.As(err, &failed) {
			failed.output, failed.secretScript = out.combined(), secretScript
		}
		return nil, describeFailure(key, script, err)
	}
	return out, nil
}

// environment is what a script's environment gets: the resource's `environment`, and the previous
// run's output apart (a server that refuses the first fails the run, the second only warns, upstream).
type environment struct {
	variables, previousOutput map[string]string
}

// environmentOf reads the resource's `environment`, and the previous run's output unless
// addPreviousOutputInEnv is false.
func environmentOf(inputs, previous resource.PropertyMap) environment {
	env := environment{variables: nativeprovider.StringMap(inputs, "environment"), previousOutput: map[string]string{}}
	if previous != nil && (!nativeprovider.Has(inputs, "addPreviousOutputInEnv") || nativeprovider.Bool(inputs, "addPreviousOutputInEnv")) {
		if out := nativeprovider.String(previous, "stdout"); out != "" {
			env.previousOutput["PULUMI_COMMAND_STDOUT"] = out
		}
		if out := nativeprovider.String(previous, "stderr"); out != "" {
			env.previousOutput["PULUMI_COMMAND_STDERR"] = out
		}
	}
	return env
}

// all is every variable, the previous output set last (as upstream sets it).
func (e environment) all() map[string]string {
	all := make(map[string]string, len(e.variables)+len(e.previousOutput))
	for _, m := range []map[string]string{e.variables, e.previousOutput} {
		for k, v := range m {
			all[k] = v
		}
	}
	return all
}

func newID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
