{{/* The chart's name ("usher"). */}}
{{- define "usher.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The base name of every object: the release name when it contains the
chart's name (release "usher" gives "usher", as in deploy/), else
RELEASE-usher. */}}
{{- define "usher.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "usher.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. app.kubernetes.io/name is the label deploy/
uses; the others are helm's. */}}
{{- define "usher.labels" -}}
{{ include "usher.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select usher's pods: the name, and the release, so that two
releases in one namespace do not select each other's pods. */}}
{{- define "usher.selectorLabels" -}}
app.kubernetes.io/name: {{ include "usher.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The ConfigMap the chart renders. */}}
{{- define "usher.configName" -}}
{{- printf "%s-config" (include "usher.fullname" .) -}}
{{- end -}}

{{/* The Secret holding the serving certificate. */}}
{{- define "usher.tlsSecret" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{- required "certificates.existingSecret: mode secret needs the name of your Secret" .Values.certificates.existingSecret -}}
{{- else -}}
{{- printf "%s-tls" (include "usher.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Whether usher is given a webhook client CA: "true" or "". It fails
for client-cert without one. */}}
{{- define "usher.webhookClientCA" -}}
{{- $wa := .Values.webhookAuth -}}
{{- if and (eq $wa.mode "none") (or $wa.clientCA $wa.generate) -}}
{{- fail "webhookAuth.mode none checks no caller: leave webhookAuth.clientCA empty and generate false" -}}
{{- else if and $wa.clientCA $wa.generate -}}
{{- fail "webhookAuth: give clientCA or generate, not both" -}}
{{- else if or $wa.clientCA $wa.generate -}}
true
{{- else if eq $wa.mode "client-cert" -}}
{{- fail "webhookAuth.mode client-cert needs webhookAuth.clientCA (the PEM of the CA of kube-apiserver's client certificate) or webhookAuth.generate: true; on EKS, GKE and AKS, whose API server cannot present one, use mode report (docs/security.md)" -}}
{{- end -}}
{{- end -}}

{{/* The image reference: digest when given, else the tag (default the
chart's appVersion). */}}
{{- define "usher.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMaps usher reads, as a list of "NAMESPACE/NAME" (JSON). */}}
{{- define "usher.configMaps" -}}
{{- $out := list -}}
{{- if .Values.config.existingConfigMaps -}}
{{- if ne .Values.config.source "configMap" -}}
{{- fail "config.existingConfigMaps needs config.source configMap: the chart mounts only the ConfigMap it renders" -}}
{{- end -}}
{{- range .Values.config.existingConfigMaps -}}
{{- if contains "/" . -}}
{{- $out = append $out . -}}
{{- else -}}
{{- $out = append $out (printf "%s/%s" $.Release.Namespace .) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- $out = append $out (printf "%s/%s" .Release.Namespace (include "usher.configName" .)) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* bypassNamespaces with the release namespace added (JSON list). */}}
{{- define "usher.bypassNamespaces" -}}
{{- $ns := printf "^%s$" .Release.Namespace -}}
{{- $out := .Values.config.bypassNamespaces | default list -}}
{{- if not (has $ns $out) -}}
{{- $out = append $out $ns -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
