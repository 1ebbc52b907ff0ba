// Package apiclient connects the driver to the scaling API a NodefleetNodeClass names: the
// generated client with the NodeClass's endpoint, CA bundle and token, and the API's error
// responses as typed errors.
package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"nodefleet.dev/driver/pkg/nodefleetapi"
)

// Error is an error response of the scaling API: `{"error": {"code", "message", "details"}}`.
type Error struct {
	StatusCode int
	Code       string
	Message    string
	// Details as the API sent them (for InsufficientCapacity: nodeID, instanceType, zone).
	Details map[string]any
}

func (e *Error) Error() string {
	return fmt.Sprintf("scaling API answered %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// CodeOf is the API's error code of err, or "" when err is not an API error response.
func CodeOf(err error) string {
	var apiError *Error
	if errors.As(err, &apiError) {
		return apiError.Code
	}
	return ""
}

// errorOf turns a response the operation did not expect into an *Error, keeping the API's code.
// A body that is not the documented error shape (a proxy's page, say) gets the code
// "UnexpectedResponse"; the body itself is not echoed, it may be large or hold anything.
func errorOf(response *http.Response, body []byte) error {
	if response == nil {
		return &Error{Code: "UnexpectedResponse", Message: "no response"}
	}
	var decoded nodefleetapi.Error
	if err := json.Unmarshal(body, &decoded); err != nil || decoded.Error.Code == "" {
		return &Error{StatusCode: response.StatusCode, Code: "UnexpectedResponse", Message: fmt.Sprintf("%d %s without an error body", response.StatusCode, http.StatusText(response.StatusCode))}
	}
	apiError := &Error{StatusCode: response.StatusCode, Code: string(decoded.Error.Code), Message: decoded.Error.Message}
	if details, ok := decoded.Error.Details.(map[string]any); ok {
		apiError.Details = details
	}
	return apiError
}
