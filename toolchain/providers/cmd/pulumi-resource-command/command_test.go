package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"nodefleet.dev/toolchain/providers/internal/nativeprovider"
)

func secret(s string) resource.PropertyValue {
	return resource.MakeSecret(resource.NewStringProperty(s))
}
func plain(s string) resource.PropertyValue { return resource.NewStringProperty(s) }

func TestEnvironmentAddsThePreviousOutputUnlessTurnedOff(t *testing.T) {
	previous := resource.PropertyMap{"stdout": plain("out"), "stderr": plain("err")}
	env := environmentOf(resource.PropertyMap{"environment": resource.NewObjectProperty(resource.PropertyMap{"A": plain("1")})}, previous)
	if all := env.all(); all["A"] != "1" || all["PULUMI_COMMAND_STDOUT"] != "out" || all["PULUMI_COMMAND_STDERR"] != "err" || len(env.variables) != 1 {
		t.Fatalf("environment = %v", env)
	}
	off := environmentOf(resource.PropertyMap{"addPreviousOutputInEnv": resource.NewBoolProperty(false)}, previous)
	if _, ok := off.all()["PULUMI_COMMAND_STDOUT"]; ok {
		t.Fatalf("addPreviousOutputInEnv false still passed the previous stdout: %v", off)
	}
	if first := environmentOf(resource.PropertyMap{}, nil).all(); len(first) != 0 {
		t.Fatalf("a create has no previous output: %v", first)
	}
}

func TestDescribeFailureQuotesTheCommandAndTheEndOfItsOutputUnlessTheCommandIsSecret(t *testing.T) {
	long := strings.Repeat("x", 3*outputTail) + "the reason"
	quoted := describeFailure("create", "make install", &scriptError{status: "exited with status 2", output: long}).Error()
	if !strings.Contains(quoted, `running "make install"`) || !strings.HasSuffix(quoted, "the reason") || len(quoted) > outputTail+200 {
		t.Fatalf("quoted failure: %.200q (%d bytes)", quoted, len(quoted))
	}
	// Upstream quotes the output whatever the script saw (its stdin may be secret): the output is quoted.
	withheld := describeFailure("create", "install --token t0ken", &scriptError{status: "exited with status 2", output: "printed", secretScript: true}).Error()
	if strings.Contains(withheld, "t0ken") || !strings.Contains(withheld, "running [secret]:\nprinted") {
		t.Fatalf("secret command's failure: %q", withheld)
	}
	if other := describeFailure("create", "make install", errors.New("connecting to 10.0.0.1:22 as root: i/o timeout")).Error(); other != "create: connecting to 10.0.0.1:22 as root: i/o timeout" {
		t.Fatalf("connection failure: %q", other)
	}
}

// fakeRunner writes fixed output and records what it was asked to run.
type fakeRunner struct {
	stdout, stderr string
	ran            *[]string
}

func (fakeRunner) check(resource.PropertyMap) []*pulumirpc.CheckFailure { return nil }

func (f fakeRunner) run(_ context.Context, _ resource.PropertyMap, script string, secret bool, env environment, out *output) error {
	*f.ran = append(*f.ran, fmt.Sprintf("%s secret=%v prev=%s", script, secret, env.previousOutput["PULUMI_COMMAND_STDOUT"]))
	_, _ = out.stdoutWriter().Write([]byte(f.stdout))
	_, _ = out.stderrWriter().Write([]byte(f.stderr))
	return nil
}

// Upstream's framework makes an output secret only when the input of the same name is: stdout and
// stderr stay plain whatever the script saw (the old double made them secret in each case below).
func TestOutputsArePlainWhateverTheScriptSaw(t *testing.T) {
	var ran []string
	c := command{runner: fakeRunner{stdout: "out\n", stderr: "err", ran: &ran}}
	for _, tc := range []struct {
		name   string
		inputs resource.PropertyMap
	}{
		{"plain", resource.PropertyMap{"create": plain("echo")}},
		{"secret stdin", resource.PropertyMap{"create": plain("bash -s"), "stdin": secret("script")}},
		{"secret environment", resource.PropertyMap{"create": plain("env"), "environment": resource.NewObjectProperty(resource.PropertyMap{"T": secret("v")})}},
		{"secret create", resource.PropertyMap{"create": secret("echo token")}},
		{"secret update, create ran", resource.PropertyMap{"create": plain("echo"), "update": secret("echo token")}},
	} {
		_, outs, err := c.Create(context.Background(), tc.inputs, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if outs["stdout"].ContainsSecrets() || outs["stderr"].ContainsSecrets() {
			t.Errorf("%s: stdout %v, stderr %v: want both plain", tc.name, outs["stdout"], outs["stderr"])
		}
		if outs["stdin"].IsSecret() != tc.inputs["stdin"].IsSecret() {
			t.Errorf("%s: an input's own secretness is kept", tc.name)
		}
		if got := nativeprovider.String(outs, "stdout"); got != "out" {
			t.Errorf("%s: stdout %q, want the trailing newline trimmed", tc.name, got)
		}
	}
	// An update without `update` runs `create` again, with the previous stdout in its environment.
	ran = nil
	if _, err := c.Update(context.Background(), "id", resource.PropertyMap{"stdout": plain("before")}, resource.PropertyMap{"create": plain("echo")}, false); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != "echo secret=false prev=before" {
		t.Fatalf("update ran %q", ran)
	}
}

func TestOutputShowsCompleteLinesOfTheStreamsAskedFor(t *testing.T) {
	var shown []string
	out := newOutput(func(line string) { shown = append(shown, line) }, false, true)
	_, _ = out.stderrWriter().Write([]byte("one\ntw"))
	_, _ = out.stdoutWriter().Write([]byte("hidden\n"))
	_, _ = out.stderrWriter().Write([]byte("o\nthree"))
	if strings.Join(shown, "|") != "one|two" {
		t.Fatalf("before flush: %q", shown)
	}
	out.flush()
	if strings.Join(shown, "|") != "one|two|three" {
		t.Fatalf("after flush: %q", shown)
	}
	if out.combined() != "one\ntwhidden\no\nthree" || out.stdout() != "hidden\n" {
		t.Fatalf("combined %q, stdout %q", out.combined(), out.stdout())
	}
}

func TestCheckNamesTheFieldAndTheRule(t *testing.T) {
	remote := command{runner: remoteRunner{}}
	_, failures := remote.Check(resource.PropertyMap{
		"connection": resource.NewObjectProperty(resource.PropertyMap{"port": resource.NewNumberProperty(70000), "dialErrorLimit": resource.NewNumberProperty(-2), "perDialTimeout": resource.NewNumberProperty(-1), "proxy": resource.NewObjectProperty(resource.PropertyMap{"host": plain("bastion")})}),
		"assetPaths": resource.NewArrayProperty([]resource.PropertyValue{plain("*.log")}),
		"logging":    plain("verbose"),
	})
	got := map[string]string{}
	for _, f := range failures {
		got[f.Property] = f.Reason
	}
	if got["connection.host"] != "is required" || !strings.HasPrefix(got["connection.port"], "must be between") || !strings.HasPrefix(got["logging"], "must be one of") ||
		!strings.HasPrefix(got["connection.dialErrorLimit"], "must be -1") || !strings.HasPrefix(got["connection.perDialTimeout"], "must be 0") ||
		!strings.Contains(got["connection.proxy"], "not supported") || !strings.Contains(got["assetPaths"], "not supported") {
		t.Fatalf("failures: %v", got)
	}
	checked, failures := remote.Check(resource.PropertyMap{"connection": resource.NewObjectProperty(resource.PropertyMap{"host": plain("10.0.0.1"), "perDialTimeout": resource.NewNumberProperty(0)})})
	if len(failures) != 0 {
		t.Fatalf("a connection with a host is valid: %v", failures)
	}
	if !checked["connection"].IsSecret() {
		t.Fatalf("upstream declares the connection secret as a whole: %v", checked["connection"])
	}
}

func TestLocalCheckRefusesASecretScriptForAnotherInterpreter(t *testing.T) {
	local := command{runner: localRunner{}}
	_, failures := local.Check(resource.PropertyMap{"interpreter": resource.NewArrayProperty([]resource.PropertyValue{plain("/usr/bin/python3"), plain("-c")}), "create": secret("print(1)")})
	if len(failures) != 1 || failures[0].Property != "create" {
		t.Fatalf("failures: %v", failures)
	}
	if _, failures := local.Check(resource.PropertyMap{"create": secret("echo token")}); len(failures) != 0 {
		t.Fatalf("the default shell takes a secret script: %v", failures)
	}
}
