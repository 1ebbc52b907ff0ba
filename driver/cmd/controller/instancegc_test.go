package main

import (
	"testing"
	"time"
)

func TestInstanceGCGraceDefaultsWhenUnset(t *testing.T) {
	t.Setenv(instanceGCGraceVariable, "")
	if grace, err := instanceGCGraceFromEnv(); err != nil || grace != 0 {
		t.Fatalf("unset: got %v, %v; want 0 (the collector's default)", grace, err)
	}
}

func TestInstanceGCGraceIsADuration(t *testing.T) {
	t.Setenv(instanceGCGraceVariable, "90s")
	if grace, err := instanceGCGraceFromEnv(); err != nil || grace != 90*time.Second {
		t.Fatalf("90s: got %v, %v", grace, err)
	}
}

func TestInstanceGCGraceRefusesNonsense(t *testing.T) {
	for _, text := range []string{"ten minutes", "5s", "-1m"} {
		t.Setenv(instanceGCGraceVariable, text)
		if _, err := instanceGCGraceFromEnv(); err == nil {
			t.Errorf("%s=%q accepted", instanceGCGraceVariable, text)
		}
	}
}
