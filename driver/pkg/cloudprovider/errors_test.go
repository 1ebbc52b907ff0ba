package cloudprovider

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"nodefleet.dev/driver/pkg/fake"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// documentedErrorCodes are the codes openapi.json's ErrorCode schema lists, so a code the API adds
// is covered here without editing the test.
func documentedErrorCodes(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &document); err != nil {
		t.Fatal(err)
	}
	codes := document.Components.Schemas["ErrorCode"].Enum
	if len(codes) < 10 {
		t.Fatalf("openapi.json lists %d error codes in components.schemas.ErrorCode, expected the API's full list", len(codes))
	}
	return codes
}

func TestCreateMapsEveryErrorCode(t *testing.T) {
	for _, code := range documentedErrorCodes(t) {
		t.Run(code, func(t *testing.T) {
			e := newEnvironment(t)
			e.api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: code, Message: "answered " + code})
			_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-err"))
			if err == nil {
				t.Fatal("Create succeeded")
			}
			switch code {
			case "InsufficientCapacity", "NoCompatibleInstanceType":
				if !cloudprovider.IsInsufficientCapacityError(err) {
					t.Fatalf("err = %v, want InsufficientCapacityError", err)
				}
			case "PoolNotFound", "ClusterNotFound":
				if !cloudprovider.IsNodeClassNotReadyError(err) {
					t.Fatalf("err = %v, want NodeClassNotReadyError", err)
				}
			default:
				var createError *cloudprovider.CreateError
				if !errors.As(err, &createError) {
					t.Fatalf("err = %v, want CreateError", err)
				}
				if createError.ConditionReason != code || createError.ConditionMessage != "answered "+code {
					t.Fatalf("CreateError reason %q message %q, want the API's code and message", createError.ConditionReason, createError.ConditionMessage)
				}
				if cloudprovider.IsInsufficientCapacityError(err) || cloudprovider.IsNodeClassNotReadyError(err) {
					t.Fatalf("err = %v is also another typed error", err)
				}
			}
		})
	}
}

func TestCreateRemembersTheOfferingOfAnInsufficientCapacityAnswer(t *testing.T) {
	e := newEnvironment(t)
	e.api.FailNext("createNode", fake.ErrorAnswer{Status: 409, Code: "InsufficientCapacity", Message: "sold out",
		Details: map[string]any{"instanceType": "cx22", "zone": "fsn1"}})
	if _, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-ice")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("err = %v", err)
	}
	if !e.soldOut.IsSoldOut(testCluster, "cx22", "fsn1") || e.soldOut.IsSoldOut(testCluster, "cx22", "hel1") {
		t.Error("want exactly cx22 in fsn1 remembered as sold out")
	}
}

func TestCreateErrorsWithoutAnAPIAnswer(t *testing.T) {
	t.Run("a body that is not the error shape", func(t *testing.T) {
		e := newEnvironment(t)
		e.api.FailNext("createNode", fake.ErrorAnswer{Status: 502, RawBody: "<html>bad gateway</html>"})
		_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-proxy"))
		var createError *cloudprovider.CreateError
		if !errors.As(err, &createError) || createError.ConditionReason != "UnexpectedResponse" {
			t.Fatalf("err = %v, want CreateError UnexpectedResponse", err)
		}
	})
	t.Run("the API unreachable", func(t *testing.T) {
		e := newEnvironment(t)
		e.api.Close()
		_, err := e.cloudProvider.Create(context.Background(), nodeClaim("default-down"))
		var createError *cloudprovider.CreateError
		if err == nil || errors.As(err, &createError) || cloudprovider.IsInsufficientCapacityError(err) || cloudprovider.IsNodeClassNotReadyError(err) {
			t.Fatalf("err = %v, want a plain error Karpenter retries", err)
		}
	})
}
