package apiclient

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/fake"
)

// writeAtomically replaces the file as kubelet updates a projected volume: a new file renamed over
// the old, so a reader sees either token whole, never a half-written one.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	next := path + ".next"
	if err := os.WriteFile(next, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
}

// A NodeClass without tokenSecretRef presents the projected token, read again on every request: the
// token kubelet rotated in is used from the next request on, by the same Connection.
func TestProjectedTokenIsReadOnEveryRequest(t *testing.T) {
	api := fake.NewScalingAPI("prod", "jwt-first", "workers")
	defer api.Close()
	path := filepath.Join(t.TempDir(), "token")
	writeAtomically(t, path, "jwt-first\n")
	nodeClass := nodeClassFor(api.URL())
	nodeClass.Spec.TokenSecretRef = nil
	connection, err := NewConnections(NodeClassTokens{Projected: ProjectedToken{Path: path}}).For(nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := connection.Cluster(ctx); err != nil {
		t.Fatalf("with the first token: %v", err)
	}
	writeAtomically(t, path, "jwt-rotated")
	api.SetTokens("jwt-rotated")
	if _, err := connection.Cluster(ctx); err != nil {
		t.Fatalf("after kubelet rotated the token: %v", err)
	}
	requests := api.Requests()
	if first, last := requests[0].Authorization, requests[len(requests)-1].Authorization; first != "Bearer jwt-first" || last != "Bearer jwt-rotated" {
		t.Fatalf("authorised with %q then %q, want the first token then the rotated one (whitespace trimmed)", first, last)
	}
}

// Errors name the file or the field and the rule, never a token.
func TestProjectedTokenErrorsNameTheFileAndTheRule(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	writeAtomically(t, empty, " \n")
	unreadable := filepath.Join(dir, "dir-not-file")
	if err := os.Mkdir(unreadable, 0o700); err != nil {
		t.Fatal(err)
	}
	secretClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tokenSecret("secret-value")).Build()
	withRef := nodeClassFor("https://api.example")
	withoutRef := nodeClassFor("https://api.example")
	withoutRef.Spec.TokenSecretRef = nil
	cases := map[string]struct {
		tokens TokenSource
		ref    bool
		want   string
	}{
		"missing file":     {tokens: NodeClassTokens{Projected: ProjectedToken{Path: filepath.Join(dir, "absent")}}, want: `does not exist: mount a serviceAccountToken projected volume with audience "nodefleet"`},
		"empty file":       {tokens: NodeClassTokens{Projected: ProjectedToken{Path: empty}}, want: "NODEFLEET_TOKEN_FILE): is empty"},
		"unreadable file":  {tokens: NodeClassTokens{Projected: ProjectedToken{Path: unreadable}}, want: "cannot be read"},
		"no token at all":  {tokens: NodeClassTokens{}, want: "spec.tokenSecretRef is not set and the driver has no projected ServiceAccount token (NODEFLEET_TOKEN_FILE)"},
		"Secret not read":  {tokens: NodeClassTokens{Projected: ProjectedToken{Path: empty}}, ref: true, want: "the driver reads no Secrets"},
		"another Secret":   {tokens: NodeClassTokens{Secrets: SecretTokens{Reader: secretClient, Namespace: "karpenter", Name: "only-this-one"}}, ref: true, want: `reads only the Secret "only-this-one" (NODEFLEET_TOKEN_SECRET)`},
		"the named Secret": {tokens: NodeClassTokens{Secrets: SecretTokens{Reader: secretClient, Namespace: "karpenter", Name: "nodefleet-token"}}, ref: true},
		"a Secret by ref":  {tokens: NodeClassTokens{Secrets: SecretTokens{Reader: secretClient, Namespace: "karpenter"}, Projected: ProjectedToken{Path: empty}}, ref: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			nodeClass := withoutRef
			if c.ref {
				nodeClass = withRef
			}
			token, err := c.tokens.Token(context.Background(), nodeClass)
			if c.want == "" {
				if err != nil || token != "secret-value" {
					t.Fatalf("got %q, %v; want the Secret's token", token, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			// A TokenError turns the NodeClass NotReady and fails launches NodeClassNotReady at once.
			var tokenError *TokenError
			if !errors.As(err, &tokenError) {
				t.Fatalf("error %T, want a *TokenError", err)
			}
			if strings.Contains(err.Error(), "secret-value") {
				t.Fatal("the error contains a token")
			}
		})
	}
}
