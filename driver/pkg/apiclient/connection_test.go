package apiclient

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"nodefleet.dev/driver/pkg/apis/v1alpha1"
	"nodefleet.dev/driver/pkg/fake"
)

func nodeClassFor(endpoint string) *v1alpha1.NodefleetNodeClass {
	return &v1alpha1.NodefleetNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.NodefleetNodeClassSpec{
			Endpoint: endpoint, ClusterID: "prod", Pool: "workers",
			TokenSecretRef: &v1alpha1.SecretKeyReference{Name: "nodefleet-token", Namespace: "karpenter"},
		},
	}
}

func tokenSecret(token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "nodefleet-token", Namespace: "karpenter"},
		Data:       map[string][]byte{"token": []byte(token)},
	}
}

// A rotated Secret is used from the next request on, by the same Connection.
func TestTokenRotationTakesEffectOnTheNextRequest(t *testing.T) {
	api := fake.NewScalingAPI("prod", "old-token", "workers")
	defer api.Close()
	secret := tokenSecret("old-token")
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(secret).Build()
	connection, err := NewConnections(SecretTokens{Reader: kubeClient, Namespace: "karpenter"}).For(nodeClassFor(api.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := connection.Cluster(ctx); err != nil {
		t.Fatalf("with the old token: %v", err)
	}
	api.SetTokens("new-token")
	if _, err := connection.Cluster(ctx); CodeOf(err) != "Unauthorized" {
		t.Fatalf("after the API rotated, before the Secret did: %v, want Unauthorized", err)
	}
	secret.Data["token"] = []byte("new-token")
	if err := kubeClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := connection.Cluster(ctx); err != nil {
		t.Fatalf("after the Secret was rotated: %v", err)
	}
	requests := api.Requests()
	if last := requests[len(requests)-1]; last.Authorization != "Bearer new-token" {
		t.Fatalf("last request authorised with %q", last.Authorization)
	}
}

func TestTokenErrorsNameTheSecretAndNeverTheToken(t *testing.T) {
	cases := map[string]struct {
		objects   []client.Object
		nodeClass func(*v1alpha1.NodefleetNodeClass)
		want      string
	}{
		"missing Secret":  {want: "does not exist"},
		"missing key":     {objects: []client.Object{tokenSecret("secret-value")}, nodeClass: func(n *v1alpha1.NodefleetNodeClass) { n.Spec.TokenSecretRef.Key = "other" }, want: "missing or empty"},
		"other namespace": {objects: []client.Object{tokenSecret("secret-value")}, nodeClass: func(n *v1alpha1.NodefleetNodeClass) { n.Spec.TokenSecretRef.Namespace = "default" }, want: `only in namespace "karpenter"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(c.objects...).Build()
			nodeClass := nodeClassFor("http://127.0.0.1:1")
			if c.nodeClass != nil {
				c.nodeClass(nodeClass)
			}
			_, err := SecretTokens{Reader: kubeClient, Namespace: "karpenter"}.Token(context.Background(), nodeClass)
			var tokenError *TokenError
			if !errors.As(err, &tokenError) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nodefleet-token") {
				t.Fatalf("err = %v, want a TokenError saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret-value") {
				t.Fatal("the error contains the token")
			}
		})
	}
}

// With a CA bundle the API's certificate is checked against it; without one, against the system
// roots (which do not know a test server's certificate).
func TestCABundleIsTrusted(t *testing.T) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"prod","kind":"k0s","providerIdScheme":"nodefleet","pools":[]}`))
	}))
	defer server.Close()
	caBundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tokenSecret("t")).Build()
	connections := NewConnections(SecretTokens{Reader: kubeClient})

	withoutCA, err := connections.For(nodeClassFor(server.URL))
	if err != nil {
		t.Fatal(err)
	}
	var unknownAuthority x509.UnknownAuthorityError
	if _, err := withoutCA.Cluster(context.Background()); !errors.As(err, &unknownAuthority) {
		t.Fatalf("without the CA bundle: %v, want an unknown-authority error", err)
	}
	nodeClass := nodeClassFor(server.URL)
	nodeClass.Spec.CABundle = caBundle
	withCA, err := connections.For(nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	if cluster, err := withCA.Cluster(context.Background()); err != nil || cluster.Id != "prod" {
		t.Fatalf("with the CA bundle: %v, %v", cluster, err)
	}

	nodeClass.Spec.CABundle = []byte("not a certificate")
	if _, err := connections.For(nodeClass); err == nil || !strings.Contains(err.Error(), "spec.caBundle") {
		t.Fatalf("a CA bundle without a certificate: %v, want an error naming spec.caBundle", err)
	}
}

func TestIdleConnectionsCloseBeforeTheServiceClosesThem(t *testing.T) {
	client, err := NewConnections(nil).httpClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTripper := client.Transport
	if instrumented, ok := roundTripper.(instrumentedTransport); ok {
		roundTripper = instrumented.next
	}
	transport, ok := roundTripper.(*http.Transport)
	if !ok {
		t.Fatalf("transport is %T", roundTripper)
	}
	if transport.IdleConnTimeout <= 0 || transport.IdleConnTimeout >= serviceKeepAlive {
		t.Fatalf("idle connections are kept %s; the service closes them after %s", transport.IdleConnTimeout, serviceKeepAlive)
	}
}

// A hung API fails the call after the configured timeout instead of holding the caller.
func TestCallsTimeOut(t *testing.T) {
	api := fake.NewScalingAPI("prod", "t0ken", "workers")
	defer api.Close()
	api.Delay(time.Minute)
	kubeClient := clientfake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(tokenSecret("t0ken")).Build()
	connections := NewConnections(SecretTokens{Reader: kubeClient, Namespace: "karpenter"})
	connections.RequestTimeout = 200 * time.Millisecond
	connection, err := connections.For(nodeClassFor(api.URL()))
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	_, err = connection.Cluster(context.Background())
	if elapsed := time.Since(started); err == nil || elapsed > 5*time.Second {
		t.Fatalf("Cluster against a hung API answered %v after %s, want an error after about 200ms", err, elapsed)
	}
}
