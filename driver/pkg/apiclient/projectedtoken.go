package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
)

// Audience is the audience the driver's projected ServiceAccount token is requested for; the
// scaling API accepts tokens only for it (automation/api/serviceAccountTokens.ts).
const Audience = "nodefleet"

// ProjectedToken reads the ServiceAccount token kubelet projects into the pod (a
// serviceAccountToken volume with audience nodefleet). The file is read on every request: kubelet
// replaces it atomically well before it expires, so the next request presents the new token
// without a restart and the driver never holds one longer than a request.
// https://kubernetes.io/docs/concepts/storage/projected-volumes/#serviceaccounttoken
type ProjectedToken struct {
	// Path of the token file (NODEFLEET_TOKEN_FILE).
	Path string
}

// projectedTokenError says why the projected token cannot be used, as a TokenError: the NodeClass
// turns NotReady and launches fail NodeClassNotReady at once, as for a missing Secret. It never
// contains the token.
func projectedTokenError(path, reason string) error {
	return &TokenError{Reason: fmt.Sprintf("projected ServiceAccount token %s (NODEFLEET_TOKEN_FILE): %s", path, reason)}
}

// Token reads the file; an empty or unreadable file is an error naming the path and the rule.
func (p ProjectedToken) Token(_ context.Context, _ *v1alpha1.NodefleetNodeClass) (string, error) {
	content, err := os.ReadFile(p.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", projectedTokenError(p.Path, fmt.Sprintf("does not exist: mount a serviceAccountToken projected volume with audience %q there", Audience))
		}
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return "", projectedTokenError(p.Path, fmt.Sprintf("cannot be read: %v", err))
	}
	token := strings.TrimSpace(string(content))
	if token == "" {
		return "", projectedTokenError(p.Path, "is empty")
	}
	return token, nil
}

// NodeClassTokens gives each NodeClass the token it asks for: the Secret its tokenSecretRef
// names, or without one the driver's projected ServiceAccount token.
type NodeClassTokens struct {
	// Secrets reads tokenSecretRef; nil when the driver reads no Secrets.
	Secrets TokenSource
	// Projected is the projected token; nil when the driver has none (NODEFLEET_TOKEN_FILE unset).
	Projected TokenSource
}

func (t NodeClassTokens) Token(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (string, error) {
	if nodeClass.Spec.TokenSecretRef != nil {
		if t.Secrets == nil {
			return "", &TokenError{Reason: "spec.tokenSecretRef is set but the driver reads no Secrets (it runs with NODEFLEET_TOKEN_FILE only): remove tokenSecretRef to use the projected ServiceAccount token"}
		}
		return t.Secrets.Token(ctx, nodeClass)
	}
	if t.Projected == nil {
		return "", &TokenError{Reason: "spec.tokenSecretRef is not set and the driver has no projected ServiceAccount token (NODEFLEET_TOKEN_FILE): set one of them"}
	}
	return t.Projected.Token(ctx, nodeClass)
}
