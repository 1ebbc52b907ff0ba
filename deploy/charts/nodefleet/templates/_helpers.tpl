{{/* The chart's name. */}}
{{- define "nodefleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects. */}}
{{- define "nodefleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "nodefleet.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "nodefleet.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "nodefleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodefleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodefleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodefleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodefleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodefleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The cloud credentials the service and its engine read (docs/environment.md). */}}
{{- define "nodefleet.cloudCredentialNames" -}}
{{- list "HCLOUD_TOKEN" "SCW_ACCESS_KEY" "SCW_SECRET_KEY" "SCW_DEFAULT_PROJECT_ID" "HROBOT_USER" "HROBOT_PASSWORD" | toJson }}
{{- end }}

{{/* The Secrets: each the existing one, or the chart's. */}}
{{- define "nodefleet.cloudSecretName" -}}
{{- default (printf "%s-cloud" (include "nodefleet.fullname" .)) .Values.cloudCredentials.existingSecret }}
{{- end }}
{{- define "nodefleet.apiTokensSecretName" -}}
{{- default (printf "%s-api-tokens" (include "nodefleet.fullname" .)) .Values.apiTokens.existingSecret }}
{{- end }}
{{- define "nodefleet.passphraseSecretName" -}}
{{- default (printf "%s-passphrase" (include "nodefleet.fullname" .)) .Values.passphrase.existingSecret }}
{{- end }}
{{- define "nodefleet.projectConfigMapName" -}}
{{- default (printf "%s-project" (include "nodefleet.fullname" .)) .Values.project.existingConfigMap }}
{{- end }}

{{/* The scheme of the probes and the scrape. */}}
{{- define "nodefleet.scheme" -}}
{{- if .Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* Values the service cannot run with, refused at render time with what to do instead. */}}
{{- define "nodefleet.checks" -}}
{{- if lt (int .Values.replicas) 1 }}
{{- fail (printf "replicas is %v, but must be 1 or more" .Values.replicas) }}
{{- end }}
{{- if gt (int .Values.replicas) 1 }}
{{- $missing := list }}
{{- if not .Values.database.existingSecret }}{{ $missing = append $missing "database.existingSecret (claims and engine runs in PostgreSQL)" }}{{ end }}
{{- if not (hasPrefix "s3://" .Values.engineState.backendUrl) }}{{ $missing = append $missing "engineState.backendUrl, an s3:// URL (the API stacks' state in object storage)" }}{{ end }}
{{- if not (or .Values.passphrase.existingSecret .Values.passphrase.value) }}{{ $missing = append $missing "passphrase (one for every replica)" }}{{ end }}
{{- if not (or .Values.apiTokens.existingSecret .Values.apiTokens.value) }}{{ $missing = append $missing "apiTokens (one set for every replica)" }}{{ end }}
{{- if eq .Values.engine "simulated" }}{{ $missing = append $missing "engine automation or \"\" (the simulated cloud lives in one pod)" }}{{ end }}
{{- if $missing }}
{{- fail (printf "replicas is %v, which needs the shared mode; missing: %s. With 1 replica the embedded mode needs none of them. See docs/deploy.md, \"Replicas\"." .Values.replicas (join "; " $missing)) }}
{{- end }}
{{- end }}
{{- include "nodefleet.temporalChecks" . }}
{{- if not .Values.stacks }}
{{- fail "stacks is empty: name at least one stack to serve, or a pattern such as \"*\"" }}
{{- end }}
{{- if not (has .Values.engine (list "" "automation" "simulated")) }}
{{- fail (printf "engine is %q: \"automation\", \"simulated\" or \"\" (chosen by the credentials)" .Values.engine) }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName: a kubernetes.io/tls Secret in the release namespace (keys tls.crt, tls.key)" }}
{{- end }}
{{- $allowed := include "nodefleet.cloudCredentialNames" . | fromJsonArray }}
{{- range $name, $_ := .Values.cloudCredentials.values }}
{{- if not (has $name $allowed) }}
{{- fail (printf "cloudCredentials.values has %s: the service reads only %s" $name (join ", " $allowed)) }}
{{- end }}
{{- end }}
{{- range $stack, $secret := .Values.cloudCredentials.perCluster }}
{{- if not (regexMatch "^[A-Za-z0-9_.-]+$" $stack) }}
{{- fail (printf "cloudCredentials.perCluster has %q: each key is a stack name (letters, digits, -, _ and .)" $stack) }}
{{- end }}
{{- if not $secret }}
{{- fail (printf "cloudCredentials.perCluster.%s is empty: name the Secret holding that cluster's credentials" $stack) }}
{{- end }}
{{- end }}
{{- if and .Values.project.existingConfigMap .Values.project.stackFiles }}
{{- fail "project.existingConfigMap and project.stackFiles are both set: the stack files come from one ConfigMap; put them in the existing one" }}
{{- end }}
{{- range $file, $_ := .Values.project.stackFiles }}
{{- if not (regexMatch "^Pulumi\\.[A-Za-z0-9_.-]+\\.ya?ml$" $file) }}
{{- fail (printf "project.stackFiles has %q: each key is a stack file's name, Pulumi.<stack>.yaml" $file) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The PEM files a Temporal TLS Secret may hold (docs/environment.md's NODEFLEET_TEMPORAL_TLS_*). */}}
{{- define "nodefleet.temporalTlsKeys" -}}
{{- list "ca.crt" "tls.crt" "tls.key" | toJson }}
{{- end }}

{{/* Temporal values the service would refuse at start, refused here naming the value. */}}
{{- define "nodefleet.temporalChecks" -}}
{{- $temporal := .Values.temporal }}
{{- $tls := $temporal.tls }}
{{- $name := "^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$" }}
{{- with default "" $temporal.address | toString }}
{{- if not (regexMatch "^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):[0-9]{1,5}$" .) }}
{{- fail (printf "temporal.address is %q, not HOST:PORT (the Temporal frontend's gRPC address, such as temporal-frontend.temporal:7233)" .) }}
{{- end }}
{{- $port := regexReplaceAll "^.*:" . "" | atoi }}
{{- if or (lt $port 1) (gt $port 65535) }}
{{- fail (printf "temporal.address is %q: its port must be 1 to 65535" .) }}
{{- end }}
{{- if not $.Values.database.existingSecret }}
{{- fail "temporal.address needs database.existingSecret: the workers of every replica run the claims, so the claims must be in the shared PostgreSQL database" }}
{{- end }}
{{- if not (regexMatch $name (toString $temporal.namespace)) }}
{{- fail (printf "temporal.namespace is %q, not a name (letters, digits, '.', '_' and '-', at most 255)" (toString $temporal.namespace)) }}
{{- end }}
{{- if not (regexMatch $name (toString $temporal.taskQueue)) }}
{{- fail (printf "temporal.taskQueue is %q, not a name (letters, digits, '.', '_' and '-', at most 255)" (toString $temporal.taskQueue)) }}
{{- end }}
{{- else }}
{{- if or $tls.enabled $tls.existingSecret $tls.keys }}
{{- fail "temporal.tls is set, but temporal.address is empty: the TLS settings are for the connection to the Temporal frontend; set temporal.address, or unset temporal.tls" }}
{{- end }}
{{- end }}
{{- $allowed := include "nodefleet.temporalTlsKeys" . | fromJsonArray }}
{{- range $tls.keys }}
{{- if not (has . $allowed) }}
{{- fail (printf "temporal.tls.keys has %q: the Secret's keys are among %s" . (join ", " $allowed)) }}
{{- end }}
{{- end }}
{{- if ne (has "tls.crt" $tls.keys) (has "tls.key" $tls.keys) }}
{{- fail "temporal.tls.keys names one of tls.crt and tls.key: a client certificate needs its key, and a key its certificate; name both or neither" }}
{{- end }}
{{- if and $tls.existingSecret (not $tls.keys) }}
{{- fail "temporal.tls.existingSecret needs temporal.tls.keys: say which of ca.crt, tls.crt and tls.key the Secret holds" }}
{{- end }}
{{- if and $tls.keys (not $tls.existingSecret) }}
{{- fail "temporal.tls.keys needs temporal.tls.existingSecret: the Secret holding those files" }}
{{- end }}
{{- if and $tls.existingSecret (not $tls.enabled) }}
{{- fail "temporal.tls.existingSecret needs temporal.tls.enabled: its certificates are for TLS to the frontend" }}
{{- end }}
{{- end }}

{{/* The container's environment: settings, then credentials from Secrets (never as literal values). */}}
{{- define "nodefleet.env" -}}
- name: NODEFLEET_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: NODEFLEET_SHUTDOWN_GRACE_MS
  value: {{ mul (int .Values.shutdownGraceSeconds) 1000 | quote }}
{{- with .Values.driverServiceAccount }}
- name: NODEFLEET_SERVICE_ACCOUNT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.pulumiBackendUrl }}
- name: PULUMI_BACKEND_URL
  value: {{ . | quote }}
{{- end }}
{{- if and .Values.engineState.existingSecret (not .Values.engineState.backendUrl) }}
{{- fail "engineState.existingSecret needs engineState.backendUrl: the object store's credentials serve no backend otherwise" }}
{{- end }}
{{- if .Values.cloudCredentials.perCluster }}
- name: NODEFLEET_CLUSTER_CREDENTIALS_DIR
  value: /etc/nodefleet/cluster-credentials
{{- end }}
{{- with .Values.database.existingSecret }}
- name: NODEFLEET_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.database.urlKey }}
{{- end }}
{{- with .Values.temporal.address }}
- name: NODEFLEET_TEMPORAL_ADDRESS
  value: {{ . | quote }}
- name: NODEFLEET_TEMPORAL_NAMESPACE
  value: {{ $.Values.temporal.namespace | quote }}
- name: NODEFLEET_TEMPORAL_TASK_QUEUE
  value: {{ $.Values.temporal.taskQueue | quote }}
{{- if $.Values.temporal.tls.enabled }}
- name: NODEFLEET_TEMPORAL_TLS
  value: "true"
{{- end }}
{{- if has "ca.crt" $.Values.temporal.tls.keys }}
- name: NODEFLEET_TEMPORAL_TLS_CA_FILE
  value: /etc/nodefleet/temporal-tls/ca.crt
{{- end }}
{{- if has "tls.crt" $.Values.temporal.tls.keys }}
- name: NODEFLEET_TEMPORAL_TLS_CERT_FILE
  value: /etc/nodefleet/temporal-tls/tls.crt
- name: NODEFLEET_TEMPORAL_TLS_KEY_FILE
  value: /etc/nodefleet/temporal-tls/tls.key
{{- end }}
{{- end }}
{{- with .Values.engineState.backendUrl }}
- name: NODEFLEET_API_STACK_BACKEND_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.engineState.existingSecret }}
{{- range list "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.engineState.existingSecret }}
      key: {{ . }}
{{- end }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: NODEFLEET_TLS_CERT_FILE
  value: /etc/nodefleet/tls/tls.crt
- name: NODEFLEET_TLS_KEY_FILE
  value: /etc/nodefleet/tls/tls.key
{{- end }}
{{- $cloudSecret := include "nodefleet.cloudSecretName" . }}
{{- range (include "nodefleet.cloudCredentialNames" . | fromJsonArray) }}
{{- if $.Values.cloudCredentials.existingSecret }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $cloudSecret }}
      key: {{ . }}
      optional: true
{{- else if hasKey $.Values.cloudCredentials.values . }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ $cloudSecret }}
      key: {{ . }}
{{- end }}
{{- end }}
{{- if or .Values.apiTokens.existingSecret .Values.apiTokens.value }}
- name: NODEFLEET_API_TOKENS
  valueFrom:
    secretKeyRef:
      name: {{ include "nodefleet.apiTokensSecretName" . }}
      key: {{ .Values.apiTokens.key }}
{{- end }}
{{- if or .Values.passphrase.existingSecret .Values.passphrase.value }}
- name: PULUMI_CONFIG_PASSPHRASE
  valueFrom:
    secretKeyRef:
      name: {{ include "nodefleet.passphraseSecretName" . }}
      key: {{ .Values.passphrase.key }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
