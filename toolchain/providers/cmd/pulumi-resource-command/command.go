package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// runner runs one command where a Command resource says (over SSH, or on this machine).
type runner interface {
	// check validates the inputs only this kind of Command has (connection, dir, interpreter).
	check(inputs resource.PropertyMap) []*pulumirpc.CheckFailure
	// run runs script with stdin and the environment, writing its stdout and stderr to out.
	run(ctx context.Context, inputs resource.PropertyMap, script string, env map[string]string, out *output) error
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
	if v := news["logging"]; v.IsString() {
		if !contains(loggingValues, v.StringValue()) {
			failures = append(failures, nativeprovider.Failure("logging", fmt.Sprintf("must be one of %s, not %q", strings.Join(loggingValues, ", "), v.StringValue())))
		}
	}
	for _, key := range []resource.PropertyKey{"assetPaths", "archivePaths"} {
		if nativeprovider.Has(news, string(key)) {
			failures = append(failures, nativeprovider.Failure(string(key), "is not supported by nodefleet's command provider"))
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
	script := nativeprovider.String(olds, "delete")
	if script == "" {
		return nil
	}
	return describeFailure(olds, "delete", c.execute(ctx, olds, "delete", script, olds).err)
}

// runInto runs the script under key and records its output in outs (empty when there is no script);
// the output is secret when the script is, as upstream derives it from create and update.
func (c command) runInto(ctx context.Context, outs resource.PropertyMap, key string, previous resource.PropertyMap) error {
	stdout, stderr := "", ""
	if script := nativeprovider.String(outs, key); script != "" {
		result := c.execute(ctx, outs, key, script, previous)
		if result.err != nil {
			return describeFailure(outs, key, result.err)
		}
		stdout, stderr = result.stdout, result.stderr
	}
	secret := outs[resource.PropertyKey(key)].ContainsSecrets()
	outs["stdout"] = maybeSecret(resource.NewStringProperty(strings.TrimSuffix(stdout, "\n")), secret)
	outs["stderr"] = maybeSecret(resource.NewStringProperty(strings.TrimSuffix(stderr, "\n")), secret)
	return nil
}

type execution struct {
	stdout, stderr string
	err            error
}

// execute runs the script under key, showing the streams `logging` names (both by default) under the
// resource as they arrive, unless anything the script sees is secret: a secret never reaches the
// engine's log, which is kept in clear.
func (c command) execute(ctx context.Context, inputs resource.PropertyMap, key, script string, previous resource.PropertyMap) execution {
	logging := nativeprovider.String(inputs, "logging")
	if logging == "" {
		logging = "stdoutAndStderr"
	}
	if seesSecrets(inputs, key, previous) {
		logging = "none"
	}
	out := newOutput(ctx, logging == "stdout" || logging == "stdoutAndStderr", logging == "stderr" || logging == "stdoutAndStderr")
	err := c.runner.run(ctx, inputs, script, environment(inputs, previous), out)
	out.flush()
	if err != nil {
		var failed *scriptError
		if errors.As(err, &failed) {
			failed.output = out.combined()
			failed.secret = seesSecrets(inputs, key, previous)
		}
		return execution{err: err}
	}
	return execution{stdout: out.stdout(), stderr: out.stderr()}
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

// outputTail bounds the output an error quotes: the end of a failing script says why.
const outputTail = 2000

// describeFailure names the step and, unless anything the script saw is secret, quotes its command and
// the end of its output; a secret never reaches an error, which the engine logs in clear.
func describeFailure(inputs resource.PropertyMap, key string, err error) error {
	if err == nil {
		return nil
	}
	var failed *scriptError
	if !errors.As(err, &failed) {
		return fmt.Errorf("%s: %w", key, err)
	}
	if failed.secret {
		return fmt.Errorf("%s: %s (the command and its output are withheld: its inputs are secret)", key, failed.status)
	}
	output := failed.output
	if len(output) > outputTail {
		output = "..." + output[len(output)-outputTail:]
	}
	return fmt.Errorf("%s: %s: running %q:\n%s", key, failed.status, nativeprovider.String(inputs, key), output)
}

// scriptError is a script that ran and failed (as opposed to one that could not be started).
type scriptError struct {
	status string
	output string
	// secret: the script saw a secret, so its command and output are not quoted.
	secret bool
}

func (e *scriptError) Error() string { return e.status }

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

func contains(values []string, v string) bool {
	for _, value := range values {
		if value == v {
			return true
		}
	}
	return false
}
