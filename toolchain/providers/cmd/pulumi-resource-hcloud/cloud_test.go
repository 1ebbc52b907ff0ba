package main

import (
	"strings"
	"testing"
	"time"
)

// The waits before successive polls, as terraform-provider-hcloud chooses them.
func TestPollBackoffFollowsUpstream(t *testing.T) {
	cases := []struct {
		interval, function string
		want               []time.Duration
	}{
		// Doubling up to one minute (hcloud-go's ExponentialBackoff cap), not the 10s of the old double.
		{"", "", []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}},
		{"", "exponential", []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}},
		{"", "constant", []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		{"100ms", "", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"500ms", "exponential", []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}},
		{"100ms", "constant", []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}},
		{"20s", "exponential", []time.Duration{20 * time.Second, 40 * time.Second, time.Minute, time.Minute}},
		{"2m", "exponential", []time.Duration{time.Minute, time.Minute}},
	}
	for _, c := range cases {
		backoff, err := pollBackoff(c.interval, c.function)
		if err != nil {
			t.Fatalf("pollBackoff(%q, %q): %v", c.interval, c.function, err)
		}
		for retry, want := range c.want {
			if got := backoff(retry); got != want {
				t.Errorf("pollBackoff(%q, %q)(%d) = %v, want %v", c.interval, c.function, retry, got, want)
			}
		}
	}
}

func TestPollBackoffRefusesBadSettingsNamingThem(t *testing.T) {
	for _, c := range []struct{ interval, function, field string }{
		{"", "fibonacci", "pollFunction"},
		{"soon", "", "pollInterval"},
		{"-1s", "constant", "pollInterval"},
	} {
		if _, err := pollBackoff(c.interval, c.function); err == nil || !strings.HasPrefix(err.Error(), c.field+":") {
			t.Errorf("pollBackoff(%q, %q) = %v, want an error naming %s", c.interval, c.function, err, c.field)
		}
	}
}

// Configure without a token fails naming it, as upstream's does; so does a token of the wrong length.
func TestConfigureRequiresAToken(t *testing.T) {
	t.Setenv("HCLOUD_TOKEN", "")
	for _, c := range []struct{ token, want string }{
		{"", "token: missing"},
		{"short", "token: must be exactly 64 characters"},
	} {
		if err := (&cloud{}).configure(config(map[string]string{"token": c.token})); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("configure(token %q) = %v, want %q", c.token, err, c.want)
		}
	}
	t.Setenv("HCLOUD_TOKEN", strings.Repeat("e", 64))
	if err := (&cloud{}).configure(config(map[string]string{})); err != nil {
		t.Errorf("configure with HCLOUD_TOKEN: %v", err)
	}
}
