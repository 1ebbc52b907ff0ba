package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// localRunner runs a Command's script on this machine: `interpreter` (default /bin/sh -c) in `dir`.
type localRunner struct{}

// secretScriptVariable carries a secret script to the default shell: a process's arguments are
// readable by every local user (/proc/<pid>/cmdline), its environment only by its own.
const secretScriptVariable = "NODEFLEET_COMMAND_SCRIPT"

// outputGrace is how long a finished script's background processes may hold its output open.
const outputGrace = 5 * time.Second

func (localRunner) check(inputs resource.PropertyMap) []*pulumirpc.CheckFailure {
	if inputs["interpreter"].ContainsUnknowns() || !nativeprovider.Has(inputs, "interpreter") {
		return nil
	}
	if len(nativeprovider.Strings(inputs, "interpreter")) == 0 {
		return []*pulumirpc.CheckFailure{nativeprovider.Failure("interpreter", "must name a program (for example [\"/bin/bash\", \"-c\"])")}
	}
	var failures []*pulumirpc.CheckFailure
	for _, key := range []string{"create", "update", "delete"} {
		if inputs[resource.PropertyKey(key)].ContainsSecrets() {
			failures = append(failures, nativeprovider.Failure(key, "a secret script runs only with the default interpreter (it is passed in the environment, never as an argument)"))
		}
	}
	return failures
}

func (localRunner) run(ctx context.Context, inputs resource.PropertyMap, script string, secret bool, env environment, out *output) error {
	interpreter := nativeprovider.Strings(inputs, "interpreter")
	if len(interpreter) == 0 {
		interpreter = []string{"/bin/sh", "-c"}
	}
	args := append(interpreter[1:], script)
	if secret {
		args = []string{"-c", `eval "$` + secretScriptVariable + `"`}
	}
	cmd := exec.Command(interpreter[0], args...)
	cmd.Dir = nativeprovider.String(inputs, "dir")
	cmd.Env = os.Environ()
	for k, v := range env.all() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if secret {
		cmd.Env = append(cmd.Env, secretScriptVariable+"="+script)
	}
	if stdin := nativeprovider.String(inputs, "stdin"); stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = out.stdoutWriter(), out.stderrWriter()
	// Its own process group, so that a cancelled run stops the script's children too; and a
	// finished script's background processes hold its output open only for outputGrace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputGrace
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	err := cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return nil
	case errors.As(err, &exit):
		return &scriptError{status: fmt.Sprintf("exited with status %d", exit.ExitCode())}
	default:
		return err
	}
}
