{{/* Names, labels and shared pieces of the chart. */}}

{{- define "mileage.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{/* Labels of every resource, without the ones a component's selector adds. */}}
{{- define "mileage.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: mileage
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "mileage.labels" -}}
{{ include "mileage.commonLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "users") */}}
{{- define "mileage.selectorLabels" -}}
app.kubernetes.io/name: mileage-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "mileage.componentName" -}}
{{ include "mileage.fullname" .root }}-{{ .component }}
{{- end -}}

{{- define "mileage.image" -}}
{{ .root.Values.image.registry }}/{{ .root.Values.image.repository }}-{{ .component }}:{{ .root.Values.image.tag | default .root.Chart.AppVersion }}
{{- end -}}

{{/* The gRPC services, with their ports. */}}
{{- define "mileage.grpcPorts" -}}
users: 50051
groups: 50052
drives: 50053
scim: 50054
{{- end -}}

{{- define "mileage.metricsPorts" -}}
gateway: 9460
users: 9461
groups: 9462
drives: 9463
scim: 9464
{{- end -}}

{{- define "mileage.databaseSecret" -}}
{{- if .Values.postgres.existingSecret -}}{{ .Values.postgres.existingSecret }}{{- else -}}{{ include "mileage.fullname" . }}-database{{- end -}}
{{- end -}}

{{- define "mileage.gatewaySecret" -}}
{{- if .Values.gateway.existingSecret -}}{{ .Values.gateway.existingSecret }}{{- else -}}{{ include "mileage.fullname" . }}-gateway{{- end -}}
{{- end -}}

{{- define "mileage.redisSecret" -}}
{{- if .Values.redis.existingSecret -}}{{ .Values.redis.existingSecret }}{{- else -}}{{ include "mileage.fullname" . }}-gateway{{- end -}}
{{- end -}}

{{/* Restricted Pod Security Standard. */}}
{{- define "mileage.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "mileage.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Environment shared by every process. */}}
{{- define "mileage.commonEnv" -}}
- name: LOG_LEVEL
  value: {{ .root.Values.logLevel | quote }}
- name: METRICS_HOST
  value: "0.0.0.0"
- name: METRICS_PORT
  value: {{ index (include "mileage.metricsPorts" .root | fromYaml) .component | quote }}
- name: SHUTDOWN_TIMEOUT_MS
  value: {{ mul .root.Values.shutdownTimeoutSeconds 1000 | quote }}
- name: OTEL_SERVICE_NAME
  value: mileage-{{ .component }}
{{- if .root.Values.tracing.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .root.Values.tracing.otlpEndpoint | quote }}
- name: OTEL_TRACES_SAMPLER
  value: parentbased_traceidratio
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .root.Values.tracing.samplerRatio | quote }}
{{- else }}
- name: OTEL_SDK_DISABLED
  value: "true"
{{- end }}
{{- end -}}

{{- define "mileage.terminationGracePeriodSeconds" -}}
{{ add .Values.shutdownTimeoutSeconds .Values.preStopSleepSeconds 10 }}
{{- end -}}

{{- define "mileage.scimBaseUrl" -}}
{{- if .Values.scim.baseUrl -}}{{ .Values.scim.baseUrl }}{{- else -}}https://{{ .Values.ingress.host }}/scim/v2{{- end -}}
{{- end -}}
