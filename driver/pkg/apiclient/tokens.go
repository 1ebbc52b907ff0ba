package apiclient

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
)

// TokenSource gives the API token of a NodeClass.
type TokenSource interface {
	Token(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (string, error)
}

// SecretTokens reads the token from the Secret the NodeClass names, through a Reader backed by a
// watch (the manager's cache), so every request sees the Secret as it is now: a rotated token is
// used from the next request on, without a restart.
type SecretTokens struct {
	Reader client.Reader
	// Namespace is the only namespace the driver reads Secrets in (its own); a NodeClass naming
	// another one is refused rather than widening the driver's permissions.
	Namespace string
	// Name, when set, is the only Secret the driver reads (NODEFLEET_TOKEN_SECRET: the chart's
	// RBAC grants that one by resourceNames and the cache holds only it); another is refused.
	Name string
}

// TokenError says why a NodeClass's token cannot be read. It never contains the token.
type TokenError struct {
	Secret types.NamespacedName
	Key    string
	Reason string
}

func (e *TokenError) Error() string {
	if e.Secret.Name == "" {
		return "token: " + e.Reason
	}
	return fmt.Sprintf("token Secret %s key %q: %s", e.Secret, e.Key, e.Reason)
}

func (s SecretTokens) Token(ctx context.Context, nodeClass *v1alpha1.NodefleetNodeClass) (string, error) {
	ref := nodeClass.Spec.TokenSecretRef
	if ref == nil {
		return "", &TokenError{Reason: "spec.tokenSecretRef is not set"}
	}
	name := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	key := nodeClass.TokenKey()
	if s.Namespace != "" && ref.Namespace != s.Namespace {
		return "", &TokenError{Secret: name, Key: key, Reason: fmt.Sprintf("the driver reads Secrets only in namespace %q", s.Namespace)}
	}
	if s.Name != "" && ref.Name != s.Name {
		return "", &TokenError{Secret: name, Key: key, Reason: fmt.Sprintf("the driver reads only the Secret %q (NODEFLEET_TOKEN_SECRET)", s.Name)}
	}
	secret := &corev1.Secret{}
	if err := s.Reader.Get(ctx, name, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &TokenError{Secret: name, Key: key, Reason: "the Secret does not exist"}
		}
		return "", &TokenError{Secret: name, Key: key, Reason: fmt.Sprintf("cannot be read: %v", err)}
	}
	token := string(secret.Data[key])
	if token == "" {
		return "", &TokenError{Secret: name, Key: key, Reason: "the key is missing or empty"}
	}
	return token, nil
}
