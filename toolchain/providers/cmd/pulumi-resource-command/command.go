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
	run(ctx context.Context, inputs resource.PropertyMap, script string, secret bool, env map[string]string, out *output) error
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
// The output is secret when anything the script saw is, or when create or update is (upstream's rule).
func (c command) runInto(ctx context.Context, outs resource.PropertyMap, key string, previous resource.PropertyMap) error {
	out := &output{}
	if nativeprovider.String(outs, key) != "" {
		var err error
		if out, err = c.execute(ctx, outs, key, previous); err != nil {
			return err
		}
	}
	secret := seesSecrets(outs, key, previous) || outs["create"].ContainsSecrets() || outs["update"].ContainsSecrets()
	outs["stdout"] = maybeSecret(resource.NewStringProperty(strings.TrimSuffix(out.stdout(), "\n")), secret)
	outs["stderr"] = maybeSecret(resource.NewStringProperty(strings.TrimSuffix(out.stderr(), "\n")), secret)
	return nil
}

// execute runs the script under key, showing the streams `logging` names (both by default) under the
// resource as they arrive, unless anything the script sees is secret: a secret never reaches the
// engine's log, which is kept in clear. A failure is described under the same rule (failure.go).
func (c command) execute(ctx context.Context, inputs resource.PropertyMap, key string, previous resource.PropertyMap) (*output, error) {
	secret := seesSecrets(inputs, key, previous)
	logging := nativeprovider.String(inputs, "logging")
	if logging == "" {
		logging = "stdoutAndStderr"
	}
	if secret {
		logging = "none"
	}
	show := func(line string) { nativeprovider.Log(ctx, line) }
	out := newOutput(show, logging == "stdout" || logging == "stdoutAndStderr", logging == "stderr" || logging == "stdoutAndStderr")
	script := nativeprovider.String(inputs, key)
	err := c.runner.run(ctx, inputs, script, inputs[resource.PropertyKey(key)].ContainsSecrets(), environment(inputs, previous), out)
	out.flush()
	if err != nil {
		var failed *scriptError
		if errors.As(err, &failed) {
			failed.output, failed.secret = out.combined(), secret
		}
		return nil, describeFailure(key, script, err)
	}
	return out, nil
}

// environment is the resource's `environment`, plus the previous run's output unless addPreviousOutputInEnv is false.
func environment(inputs, previous resource.PropertyMap) map[string]string {
	env := nativeprovider.StringMap(inputs, "environment")
	if previous != nil && (!nativeprovider.Has(inputs, "addPreviousOutputInEnv") || nativeprovider.Bool(inputs, "addPreviousOutputInEnv")) {
		if out := nativeprovider.String(previous, "stdout"); out != "" {
			env["PULUMI_COMMAND_STDOUT"] = out
		}
		if out := nativeprovider.String(previous, "stderr"); out != "" {
			env["PULUMI_COMMAND_STDERR"] = out
		}
	}
	return env
}

// seesSecrets reports whether the script under key, its stdin, its environment or the previous
// output it is given (PULUMI_COMMAND_STDOUT/STDERR) is secret.
func seesSecrets(inputs resource.PropertyMap, key string, previous resource.PropertyMap) bool {
	for _, k := range []resource.PropertyKey{resource.PropertyKey(key), "stdin", "environment"} {
		if inputs[k].ContainsSecrets() {
			return true
		}
	}
	return previous != nil && (previous["stdout"].ContainsSecrets() || previous["stderr"].ContainsSecrets())
}

func maybeSecret(v resource.PropertyValue, secret bool) resource.PropertyValue {
	if secret {
		return resource.MakeSecret(v)
	}
	return v
}

func newID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
