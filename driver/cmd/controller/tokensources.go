package main

import (
	"errors"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/karpenter/pkg/operator"

	"nodefleet.dev/driver/pkg/apiclient"
)

// tokenSources is where the driver's API tokens come from, and the Secret cache (nil when none):
//   - NODEFLEET_TOKEN_FILE: the projected ServiceAccount token, for NodeClasses without tokenSecretRef;
//   - NODEFLEET_TOKEN_SECRET: the one Secret (in SYSTEM_NAMESPACE) tokenSecretRef may name, cached
//     by name alone, so the chart's RBAC can grant that Secret by resourceNames;
//   - neither Secret name nor token file: any Secret of SYSTEM_NAMESPACE, as before.
//
// With a token file and no Secret name the driver reads no Secrets at all.
func tokenSources(op *operator.Operator) (apiclient.NodeClassTokens, cache.Cache, error) {
	tokens := apiclient.NodeClassTokens{}
	tokenFile := os.Getenv("NODEFLEET_TOKEN_FILE")
	if tokenFile != "" {
		tokens.Projected = apiclient.ProjectedToken{Path: tokenFile}
	}
	secretName := os.Getenv("NODEFLEET_TOKEN_SECRET")
	if tokenFile != "" && secretName == "" {
		return tokens, nil, nil
	}
	namespace := os.Getenv("SYSTEM_NAMESPACE")
	if namespace == "" {
		return tokens, nil, errors.New("SYSTEM_NAMESPACE is not set: it names the namespace holding the API token Secret")
	}
	// Token Secrets are read only in the driver's own namespace, through a cache of that namespace
	// alone (of the one Secret when named): a watch keeps it current (token rotation) and the driver
	// needs no cluster-wide Secret access.
	byObject := cache.ByObject{}
	if secretName != "" {
		byObject.Field = fields.OneTermEqualSelector("metadata.name", secretName)
	}
	secrets, err := cache.New(op.GetConfig(), cache.Options{
		Scheme:            op.GetScheme(),
		Mapper:            op.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: byObject},
	})
	if err != nil {
		return tokens, nil, err
	}
	if err := op.Add(secrets); err != nil {
		return tokens, nil, err
	}
	tokens.Secrets = apiclient.SecretTokens{Reader: secrets, Namespace: namespace, Name: secretName}
	return tokens, secrets, nil
}
