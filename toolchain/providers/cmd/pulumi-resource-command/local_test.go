package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func runLocal(ctx context.Context, script string, secret bool) (*output, error) {
	out := newOutput(func(string) {}, false, false)
	return out, localRunner{}.run(ctx, resource.PropertyMap{}, script, secret, environment{}, out)
}

func TestLocalPassesASecretScriptInTheEnvironmentNotItsArguments(t *testing.T) {
	out, err := runLocal(context.Background(), `tr '\0' ' ' < /proc/$$/cmdline`, true)
	if err != nil {
		t.Fatal(err)
	}
	if args := out.stdout(); strings.Contains(args, "cmdline") || !strings.Contains(args, secretScriptVariable) {
		t.Fatalf("the shell's arguments: %q", args)
	}
}

func TestLocalCancelStopsTheScriptAndItsChildren(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	started := time.Now()
	_, err := runLocal(ctx, "sleep 30 & sleep 30", false)
	if !errors.Is(err, context.Canceled) || time.Since(started) > 3*time.Second {
		t.Fatalf("after %v: %v", time.Since(started), err)
	}
}

func TestLocalDoesNotWaitForeverForABackgroundProcess(t *testing.T) {
	started := time.Now()
	out, err := runLocal(context.Background(), "echo started; sleep 8 &", false)
	if err != nil || out.stdout() != "started\n" || time.Since(started) > outputGrace+3*time.Second {
		t.Fatalf("after %v: %q, %v", time.Since(started), out.stdout(), err)
	}
}
