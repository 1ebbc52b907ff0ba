{{/* The chart's name. */}}
{{- define "nodefleet-karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects. */}}
{{- define "nodefleet-karpenter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "nodefleet-karpenter.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "nodefleet-karpenter.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "nodefleet-karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodefleet-karpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodefleet-karpenter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodefleet-karpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodefleet-karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodefleet-karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding the API token: the existing one, or the chart's. */}}
{{- define "nodefleet-karpenter.tokenSecretName" -}}
{{- default (printf "%s-token" (include "nodefleet-karpenter.fullname" .)) .Values.token.existingSecret }}
{{- end }}

{{/* The leader election lease, one per release. */}}
{{- define "nodefleet-karpenter.leaseName" -}}
{{- printf "%s-leader-election" (include "nodefleet-karpenter.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* kubeconfig.render: "" renders everything (in-cluster), "target" only what the scaled cluster holds, "controller" only the driver's pods. */}}
{{- define "nodefleet-karpenter.renderTarget" -}}
{{- if not (has .Values.kubeconfig.render (list "" "target" "controller")) }}
{{- fail (printf "kubeconfig.render is %q: \"\", \"target\" or \"controller\"" .Values.kubeconfig.render) }}
{{- end }}
{{- if ne .Values.kubeconfig.render "controller" }}true{{ end }}
{{- end }}
{{- define "nodefleet-karpenter.renderController" -}}
{{- if ne .Values.kubeconfig.render "target" }}true{{ end }}
{{- end }}

{{/* Who the RBAC is granted to: the kubeconfig's identity in the target cluster, else the ServiceAccount. */}}
{{- define "nodefleet-karpenter.rbacSubjects" -}}
{{- if .Values.kubeconfig.subjects }}
{{- toYaml .Values.kubeconfig.subjects }}
{{- else }}
- kind: ServiceAccount
  name: {{ include "nodefleet-karpenter.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}
{{- end }}
