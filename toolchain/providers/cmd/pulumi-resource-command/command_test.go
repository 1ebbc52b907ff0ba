package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func secret(s string) resource.PropertyValue { return resource.MakeSecret(resource.NewStringProperty(s)) }
func plain(s string) resource.PropertyValue  { return resource.NewStringProperty(s) }

func TestSeesSecretsCountsTheScriptItsStdinEnvironmentAndPreviousOutput(t *testing.T) {
	cases := []struct {
		name     string
		inputs   resource.PropertyMap
		previous resource.PropertyMap
		want     bool
	}{
		{"nothing secret", resource.PropertyMap{"create": plain("echo"), "stdin": plain("x")}, resource.PropertyMap{"stdout": plain("old")}, false},
		{"secret script", resource.PropertyMap{"create": secret("echo token")}, nil, true},
		{"secret stdin", resource.PropertyMap{"create": plain("bash -s"), "stdin": secret("script")}, nil, true},
		{"secret environment value", resource.PropertyMap{"create": plain("env"), "environment": resource.NewObjectProperty(resource.PropertyMap{"T": secret("v")})}, nil, true},
		{"secret previous stdout", resource.PropertyMap{"update": plain("echo $PULUMI_COMMAND_STDOUT")}, resource.PropertyMap{"stdout": secret("old")}, true},
		{"another step's secret script", resource.PropertyMap{"create": plain("echo"), "delete": secret("rm")}, nil, false},
	}
	for _, c := range cases {
		key := "create"
		if _, ok := c.inputs["update"]; ok {
			key = "update"
		}
		if got := seesSecrets(c.inputs, key, c.previous); got != c.want {
			t.Errorf("%s: seesSecrets = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEnvironmentAddsThePreviousOutputUnlessTurnedOff(t *testing.T) {
	previous := resource.PropertyMap{"stdout": plain("out"), "stderr": plain("err")}
	env := environment(resource.PropertyMap{"environment": resource.NewObjectProperty(resource.PropertyMap{"A": plain("1")})}, previous)
	if env["A"] != "1" || env["PULUMI_COMMAND_STDOUT"] != "out" || env["PULUMI_COMMAND_STDERR"] != "err" {
		t.Fatalf("environment = %v", env)
	}
	off := environment(resource.PropertyMap{"addPreviousOutputInEnv": resource.NewBoolProperty(false)}, previous)
	if _, ok := off["PULUMI_COMMAND_STDOUT"]; ok {
		t.Fatalf("addPreviousOutputInEnv false still passed the previous stdout: %v", off)
	}
	if first := environment(resource.PropertyMap{}, nil); len(first) != 0 {
		t.Fatalf("a create has no previous output: %v", first)
	}
}

func TestDescribeFailureQuotesTheEndOfTheOutputOnlyWithoutSecrets(t *testing.T) {
	inputs := resource.PropertyMap{"create": plain("make install")}
	long := strings.Repeat("x", 3*outputTail) + "the reason"
	quoted := describeFailure(inputs, "create", &scriptError{status: "exited with status 2", output: long}).Error()
	if !strings.Contains(quoted, `running "make install"`) || !strings.HasSuffix(quoted, "the reason") || len(quoted) > outputTail+200 {
		t.Fatalf("quoted failure: %.200q (%d bytes)", quoted, len(quoted))
	}
	withheld := describeFailure(inputs, "create", &scriptError{status: "exited with status 2", output: "token-value", secret: true}).Error()
	if strings.Contains(withheld, "token-value") || strings.Contains(withheld, "make install") || !strings.Contains(withheld, "withheld") {
		t.Fatalf("secret failure: %q", withheld)
	}
	if other := describeFailure(inputs, "create", errors.New("connecting to 10.0.0.1:22 as root: i/o timeout")).Error(); other != "create: connecting to 10.0.0.1:22 as root: i/o timeout" {
		t.Fatalf("connection failure: %q", other)
	}
}

func TestCheckNamesTheFieldAndTheRule(t *testing.T) {
	remote := command{runner: remoteRunner{}}
	_, failures := remote.Check(resource.PropertyMap{
		"connection": resource.NewObjectProperty(resource.PropertyMap{"port": resource.NewNumberProperty(70000)}),
		"logging":    plain("verbose"),
	})
	got := map[string]string{}
	for _, f := range failures {
		got[f.Property] = f.Reason
	}
	if got["connection.host"] != "is required" || !strings.HasPrefix(got["connection.port"], "must be between") || !strings.HasPrefix(got["logging"], "must be one of") {
		t.Fatalf("failures: %v", got)
	}
	if _, failures := remote.Check(resource.PropertyMap{"connection": resource.NewObjectProperty(resource.PropertyMap{"host": plain("10.0.0.1")})}); len(failures) != 0 {
		t.Fatalf("a connection with a host is valid: %v", failures)
	}
}
