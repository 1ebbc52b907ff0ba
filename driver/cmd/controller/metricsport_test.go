package main

import (
	"os"
	"testing"
)

func TestMetricsPortDefaultsAwayFromTheServicePort(t *testing.T) {
	t.Setenv("METRICS_PORT", "")
	defaultMetricsPortUnlessSet()
	if got := os.Getenv("METRICS_PORT"); got != "8000" {
		t.Fatalf("METRICS_PORT unset: want the driver's default 8000, got %q", got)
	}
}

func TestMetricsPortKeepsAnExplicitSetting(t *testing.T) {
	t.Setenv("METRICS_PORT", "9090")
	defaultMetricsPortUnlessSet()
	if got := os.Getenv("METRICS_PORT"); got != "9090" {
		t.Fatalf("METRICS_PORT=9090: want it kept, got %q", got)
	}
}
