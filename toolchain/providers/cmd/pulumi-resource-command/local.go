package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

// localRunner runs a Command's script on this machine: `interpreter` (default /bin/sh -c) in `dir`.
type localRunner struct{}

func (localRunner) check(inputs resource.PropertyMap) []*pulumirpc.CheckFailure {
	if v := inputs["interpreter"]; !v.ContainsUnknowns() && nativeprovider.Has(inputs, "interpreter") && len(nativeprovider.Strings(inputs, "interpreter")) == 0 {
		return []*pulumirpc.CheckFailure{nativeprovider.Failure("interpreter", "must name a program (for example [\"/bin/bash\", \"-c\"])")}
	}
	return nil
}

func (localRunner) run(ctx context.Context, inputs resource.PropertyMap, script string, env map[string]string, out *output) error {
	interpreter := nativeprovider.Strings(inputs, "interpreter")
	if len(interpreter) == 0 {
		interpreter = []string{"/bin/sh", "-c"}
	}
	cmd := exec.CommandContext(ctx, interpreter[0], append(interpreter[1:], script)...)
	cmd.Dir = nativeprovider.String(inputs, "dir")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if stdin := nativeprovider.String(inputs, "stdin"); stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = out.stdoutWriter(), out.stderrWriter()
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return &scriptError{status: fmt.Sprintf("exited with status %d", exit.ExitCode())}
		}
		return err
	}
	return nil
}
