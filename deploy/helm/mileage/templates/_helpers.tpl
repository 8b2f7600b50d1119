{{/* Names, labels and shared pieces of the chart. */}}

{{/* The components, and the gRPC services among them with their ports. */}}
{{- define "mileage.components" -}}
[gateway, users, groups, drives, scim, webhooks]
{{- end -}}

{{- define "mileage.services" -}}
[users, groups, drives, scim, webhooks]
{{- end -}}

{{/* The services with a database: roles, Secrets, migration Jobs (the SCIM service has none). */}}
{{- define "mileage.databaseServices" -}}
[users, groups, drives, webhooks]
{{- end -}}

{{- define "mileage.grpcPorts" -}}
users: 50051
groups: 50052
drives: 50053
scim: 50054
webhooks: 50055
{{- end -}}

{{- define "mileage.metricsPorts" -}}
gateway: 9460
users: 9461
groups: 9462
drives: 9463
scim: 9464
webhooks: 9465
{{- end -}}

{{- define "mileage.httpPort" -}}8080{{- end -}}

{{/* Prefix of every resource name (≤ 40 characters, so "<prefix>-<component>-migrate" fits 63). */}}
{{- define "mileage.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every resource carries. */}}
{{- define "mileage.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: mileage
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "users"). */}}
{{- define "mileage.selectorLabels" -}}
app.kubernetes.io/name: mileage-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of a component's resources. */}}
{{- define "mileage.componentLabels" -}}
{{ include "mileage.labels" .root }}
app.kubernetes.io/name: mileage-{{ .component }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selects every pod of the release (Deployments and migration Jobs). */}}
{{- define "mileage.releaseSelector" -}}
app.kubernetes.io/part-of: mileage
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mileage.componentName" -}}
{{ include "mileage.fullname" .root }}-{{ .component }}
{{- end -}}

{{/* <registry>/<repository>-<component>:<tag>[@<digest>]: the component's tag, else image.tag, else appVersion. */}}
{{- define "mileage.image" -}}
{{- $image := (index .root.Values.components .component).image -}}
{{ .root.Values.image.registry }}/{{ .root.Values.image.repository }}-{{ .component }}:{{ $image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion }}{{ if $image.digest }}@{{ $image.digest }}{{ end }}
{{- end -}}

{{/* Most pods a component can have at once: the HPA's maximum (or the fixed count) plus the rolling update's surge. */}}
{{- define "mileage.maxPods" -}}
{{- $c := index .root.Values.components .component -}}
{{- add (ternary $c.autoscaling.maxReplicas $c.replicas $c.autoscaling.enabled) 1 -}}
{{- end -}}

{{/* Values the schema cannot judge alone; each failure says which values to change. */}}
{{- define "mileage.validate" -}}
{{- $v := .Values -}}
{{- $gw := $v.components.gateway -}}
{{- $gatewayMax := ternary $gw.autoscaling.maxReplicas $gw.replicas $gw.autoscaling.enabled -}}
{{- if and (gt (int $gatewayMax) 1) (not (include "mileage.redisEnabled" .)) -}}
{{- fail (printf "components.gateway may run %d replicas but no Redis is configured (redis.url or redis.existingSecret): rate limits would be per replica, %d times the documented limits. Configure Redis, or run one gateway replica." (int $gatewayMax) (int $gatewayMax)) -}}
{{- end -}}
{{- $worst := 2 -}}
{{- $parts := list -}}
{{- range $svc := include "mileage.databaseServices" . | fromYamlArray -}}
{{- $pods := include "mileage.maxPods" (dict "root" $ "component" $svc) | int -}}
{{- $worst = add $worst (mul $pods $v.postgres.poolMax) -}}
{{- $parts = append $parts (printf "%s %d pods" $svc $pods) -}}
{{- end -}}
{{- if gt (int $worst) (int $v.postgres.connectionBudget) -}}
{{- fail (printf "PostgreSQL connections: worst case %d (postgres.poolMax %d × (%s) + 2 for a migration Job) exceeds postgres.connectionBudget %d. Lower poolMax or the HPA maxima, raise the budget with max_connections, or put PgBouncer in front (docs/operations-helm.md)." (int $worst) (int $v.postgres.poolMax) (join ", " $parts) (int $v.postgres.connectionBudget)) -}}
{{- end -}}
{{- if ge (int $v.postgres.reservedConnections) (int $v.postgres.poolMax) -}}
{{- fail (printf "postgres.reservedConnections %d must be fewer than postgres.poolMax %d: the rest of the pool is what organizations share." (int $v.postgres.reservedConnections) (int $v.postgres.poolMax)) -}}
{{- end -}}
{{- if lt (mul $v.shutdownTimeoutSeconds 1000) (int64 $v.gateway.requestTimeoutMs) -}}
{{- fail (printf "shutdownTimeoutSeconds %d is shorter than gateway.requestTimeoutMs %d: a draining gateway would cut requests it admitted. Raise the drain or lower the timeout." (int $v.shutdownTimeoutSeconds) (int64 $v.gateway.requestTimeoutMs)) -}}
{{- end -}}
{{- if lt (int64 $v.grpc.maxConnectionAgeGraceMs) (max (int64 $v.gateway.scimDeadlineMs) (int64 $v.gateway.grpcDeadlineMs) (int64 $v.scim.grpcDeadlineMs)) -}}
{{- fail (printf "grpc.maxConnectionAgeGraceMs %d is shorter than the longest call deadline (gateway.scimDeadlineMs, gateway.grpcDeadlineMs, scim.grpcDeadlineMs): calls in flight on a recycled connection would be cut." (int64 $v.grpc.maxConnectionAgeGraceMs)) -}}
{{- end -}}
{{- if and (not $v.grpcTls.enabled) (not $v.grpcTls.allowPlaintext) -}}
{{- fail "grpcTls.enabled is false: the gRPC hop between the pods would run in plaintext, without caller identities. Keep mutual TLS on (the chart makes the certificates unless grpcTls.certManager.enabled or grpcTls.existingSecrets), or, for development only, set grpcTls.allowPlaintext: true as well" -}}
{{- end -}}
{{- if and $v.grpcTls.enabled $v.grpcTls.allowPlaintext -}}
{{- fail "grpcTls.allowPlaintext is for grpcTls.enabled: false only (development); with mutual TLS on, unset it" -}}
{{- end -}}
{{- if and $v.grpcTls.certManager.enabled (not $v.grpcTls.enabled) -}}
{{- fail "grpcTls.certManager.enabled makes the certificates of mutual TLS, which is off: set grpcTls.enabled too" -}}
{{- end -}}
{{- if and $v.grpcTls.existingSecrets (not $v.grpcTls.enabled) -}}
{{- fail "grpcTls.existingSecrets names the certificates of mutual TLS, which is off: set grpcTls.enabled too" -}}
{{- end -}}
{{- if and $v.grpcTls.certManager.enabled $v.grpcTls.existingSecrets -}}
{{- fail "grpcTls.certManager.enabled and grpcTls.existingSecrets both say who makes the gRPC certificates: choose one (neither: the chart makes them)" -}}
{{- end -}}
{{- if and (eq (include "mileage.grpcTlsMode" .) "chart") $v.networkPolicy.enabled (not $v.grpcTls.chartManaged.apiServer.egress) -}}
{{- fail "grpcTls.chartManaged.apiServer.egress is required with networkPolicy.enabled when the chart makes the gRPC certificates: where the Kubernetes API server's endpoints are, as NetworkPolicyPeers (kubectl -n default get endpointslices -l kubernetes.io/service-name=kubernetes), for its hook Job's egress rule" -}}
{{- end -}}
{{- if ge (int $v.grpcTls.chartManaged.renewBeforeDays) (int $v.grpcTls.chartManaged.validDays) -}}
{{- fail "grpcTls.chartManaged.renewBeforeDays must be shorter than validDays: every certificate would be renewed at every upgrade" -}}
{{- end -}}
{{- if and $v.grpcTls.certManager.enabled (not $v.grpcTls.certManager.issuerRef.name) -}}
{{- fail "grpcTls.certManager.issuerRef.name is required with grpcTls.certManager.enabled: a cert-manager CA issuer, so that ca.crt signs every peer" -}}
{{- end -}}
{{- with $v.postgres.cloudnativepg -}}
{{- if .enabled -}}
{{- if or $v.postgres.existingSecret $v.postgres.existingMigrationSecret -}}
{{- fail "postgres.existingSecret and postgres.existingMigrationSecret are not used with postgres.cloudnativepg.enabled: the chart makes the Cluster's roles from the passwords of postgres.roles and postgres.ownerRoles (and the services' URLs to its -rw Service); unset them" -}}
{{- end -}}
{{- range $kind := list "roles" "ownerRoles" -}}
{{- range $svc := include "mileage.databaseServices" $ | fromYamlArray -}}
{{- if (index (index $v.postgres $kind) $svc).url -}}
{{- fail (printf "postgres.%s.%s.url is not used with postgres.cloudnativepg.enabled (the URL is the Cluster's -rw Service): give its username and password instead" $kind $svc) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if ne (int $v.postgres.port) 5432 -}}
{{- fail (printf "postgres.port %d: a CloudNativePG Cluster serves on 5432 (the NetworkPolicy egress rule uses postgres.port); set it to 5432" (int $v.postgres.port)) -}}
{{- end -}}
{{- if not .backup.destinationPath -}}
{{- fail "postgres.cloudnativepg.backup.destinationPath is required with postgres.cloudnativepg.enabled: the s3://bucket/path of the WAL archive and the base backups (a Cluster without them cannot be restored)" -}}
{{- end -}}
{{- if not (or .backup.s3Credentials.secretName .backup.s3Credentials.inheritFromIAMRole) -}}
{{- fail "postgres.cloudnativepg.backup.s3Credentials: name the Secret with the bucket's access key (secretName), or set inheritFromIAMRole" -}}
{{- end -}}
{{- if and .backup.s3Credentials.secretName .backup.s3Credentials.inheritFromIAMRole -}}
{{- fail "postgres.cloudnativepg.backup.s3Credentials: secretName and inheritFromIAMRole both say where the bucket's credentials come from: choose one" -}}
{{- end -}}
{{- if and .backup.endpointCA.name (not .backup.endpointCA.key) -}}
{{- fail "postgres.cloudnativepg.backup.endpointCA.key is required with endpointCA.name: the Secret's key holding the CA bundle" -}}
{{- end -}}
{{- if .recovery.enabled -}}
{{- $cluster := include "mileage.cnpgCluster" $ -}}
{{- if not .recovery.sourceClusterName -}}
{{- fail "postgres.cloudnativepg.recovery.sourceClusterName is required with recovery.enabled: the name of the Cluster whose backups to restore" -}}
{{- end -}}
{{- if eq .recovery.sourceClusterName $cluster -}}
{{- fail (printf "postgres.cloudnativepg.recovery: the restored Cluster must have a new name (clusterName), not %s, the Cluster whose backups it restores: a restore never overwrites its source, and the new Cluster archives under its own name" $cluster) -}}
{{- end -}}
{{- if $v.migrations.enabled -}}
{{- fail "postgres.cloudnativepg.recovery.enabled needs migrations.enabled false: the restored database brings its schema, and a pre-upgrade migration Job would wait for a Cluster made only after it. Turn the migrations on again in the upgrade after the restore (docs/operations-helm.md)" -}}
{{- end -}}
{{- with .recovery.targetTime -}}
{{- if gt (mustToDate "2006-01-02T15:04:05Z07:00" .).Unix (now).Unix -}}
{{- fail (printf "postgres.cloudnativepg.recovery.targetTime %s is in the future: PostgreSQL would replay the whole archive and refuse to finish short of it. Give a past time, or leave it empty for the end of the archive" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $v.networkPolicy.enabled -}}
{{- if not $v.postgres.egress -}}
{{- if $v.postgres.cloudnativepg.enabled -}}
{{- fail (printf "postgres.egress is required with networkPolicy.enabled: the Cluster's pods, e.g. [{ podSelector: { matchLabels: { cnpg.io/cluster: %s } } }]" (include "mileage.cnpgCluster" .)) -}}
{{- end -}}
{{- fail "postgres.egress is required with networkPolicy.enabled: where PostgreSQL (or its pooler) is, as NetworkPolicyPeers (a namespaceSelector/podSelector in the cluster, an ipBlock outside it)" -}}
{{- end -}}
{{- if not $v.oidc.egress -}}
{{- fail "oidc.egress is required with networkPolicy.enabled: where Keycloak is, as NetworkPolicyPeers (a namespaceSelector/podSelector in the cluster, an ipBlock outside it)" -}}
{{- end -}}
{{- if and (include "mileage.redisEnabled" .) (not $v.redis.egress) -}}
{{- fail "redis.egress is required with Redis and networkPolicy.enabled: where Redis is, as NetworkPolicyPeers" -}}
{{- end -}}
{{- if and $v.tracing.otlpEndpoint (not $v.tracing.egress) -}}
{{- fail "tracing.egress is required with tracing.otlpEndpoint and networkPolicy.enabled: where the collector is, as NetworkPolicyPeers" -}}
{{- end -}}
{{- end -}}
{{- if and $v.operator.eraseDue.enabled (not $v.operator.enabled) -}}
{{- fail "operator.eraseDue.enabled needs operator.enabled: the erasure runs with the operator's identity. Set operator.eraseDue.enabled false too, and run npm run org -- erase-due yourself (an offboarded organization must be erased when its grace period ends)." -}}
{{- end -}}
{{- end -}}

{{/* Secrets: the chart's own, or the ones named in the values. */}}
{{- define "mileage.databaseSecret" -}}
{{- .Values.postgres.existingSecret | default (printf "%s-database" (include "mileage.fullname" .)) -}}
{{- end -}}

{{/* The schema owners' URLs: read by the migration Jobs only, never mounted by a Deployment. */}}
{{- define "mileage.migrationDatabaseSecret" -}}
{{- .Values.postgres.existingMigrationSecret | default (printf "%s-database-migration" (include "mileage.fullname" .)) -}}
{{- end -}}

{{/*
The SPIFFE id of every component's certificate up to the component's name (GRPC_TLS_SPIFFE_PREFIX): its
ServiceAccount (<fullname>-<component>) in the release's namespace, in grpcTls.trustDomain.
*/}}
{{- define "mileage.spiffePrefix" -}}
spiffe://{{ .Values.grpcTls.trustDomain }}/ns/{{ .Release.Namespace }}/sa/{{ include "mileage.fullname" . }}-
{{- end -}}

{{/* Who makes the gRPC certificates: cert-manager, existing (the user's Secrets), chart (the hook Job), or "" when
the hop is plaintext (grpcTls.allowPlaintext). */}}
{{- define "mileage.grpcTlsMode" -}}
{{- if not .Values.grpcTls.enabled -}}
{{- else if .Values.grpcTls.certManager.enabled -}}cert-manager
{{- else if .Values.grpcTls.existingSecrets -}}existing
{{- else -}}chart
{{- end -}}
{{- end -}}

{{/* The DNS names of a component's certificate: the names its callers dial (its Service, short to fully qualified):
(dict "root" $ "component" "users"). The cert-manager Certificates and the chart's issuer both use these. */}}
{{- define "mileage.grpcDnsNames" -}}
{{- $name := include "mileage.componentName" . -}}
{{- $ns := .root.Release.Namespace -}}
- {{ $name }}
- {{ $name }}.{{ $ns }}
- {{ $name }}.{{ $ns }}.svc
- {{ $name }}.{{ $ns }}.svc.cluster.local
{{- end -}}

{{/* The chart-managed CA's Secret (made by the issuer Job, never by Helm) and the issuer's name. */}}
{{- define "mileage.grpcCaSecret" -}}
{{ include "mileage.fullname" . }}-grpc-ca
{{- end -}}

{{- define "mileage.grpcIssuer" -}}
{{ include "mileage.fullname" . }}-grpc-issuer
{{- end -}}

{{/* A component's gRPC TLS Secret (kubernetes.io/tls with ca.crt): (dict "root" $ "component" "users"). */}}
{{- define "mileage.grpcTlsSecret" -}}
{{ include "mileage.componentName" . }}-grpc-tls
{{- end -}}

{{- define "mileage.gatewaySecret" -}}
{{- .Values.gateway.existingSecret | default (printf "%s-gateway" (include "mileage.fullname" .)) -}}
{{- end -}}

{{- define "mileage.webhooksSecret" -}}
{{- .Values.webhooks.existingSecret | default (printf "%s-webhooks" (include "mileage.fullname" .)) -}}
{{- end -}}

{{- define "mileage.redisEnabled" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret }}true{{ end -}}
{{- end -}}

{{- define "mileage.redisSecret" -}}
{{- .Values.redis.existingSecret | default (printf "%s-redis" (include "mileage.fullname" .)) -}}
{{- end -}}

{{/* The CloudNativePG Cluster's name (postgres.cloudnativepg), and where the pods find the CA of its server
certificates (the Cluster's <name>-ca Secret, its ca.crt alone). */}}
{{- define "mileage.cnpgCluster" -}}
{{- .Values.postgres.cloudnativepg.clusterName | default (printf "%s-postgres" (include "mileage.fullname" .)) -}}
{{- end -}}

{{- define "mileage.postgresCaDir" -}}/etc/mileage/postgres-ca{{- end -}}

{{/* The pod volume of the Cluster's CA (deployments and migration Jobs), when postgres.cloudnativepg.enabled. */}}
{{- define "mileage.postgresCaVolume" -}}
- name: postgres-ca
  secret: { secretName: {{ include "mileage.cnpgCluster" . }}-ca, items: [{ key: ca.crt, path: ca.crt }] }
{{- end -}}

{{- define "mileage.postgresCaMount" -}}
- { name: postgres-ca, mountPath: {{ include "mileage.postgresCaDir" . }}, readOnly: true }
{{- end -}}

{{/* A role's Secret for CloudNativePG (kubernetes.io/basic-auth): (dict "root" $ "service" "users" "roles" "roles"|"ownerRoles"). */}}
{{- define "mileage.cnpgRoleSecret" -}}
{{ include "mileage.fullname" .root }}-postgres-{{ .service }}{{ if eq .roles "ownerRoles" }}-owner{{ end }}
{{- end -}}

{{/* The connection URL of one service's role: (dict "root" $ "service" "users" "roles" "roles"|"ownerRoles"). */}}
{{- define "mileage.databaseUrl" -}}
{{- $pg := .root.Values.postgres -}}
{{- $kind := .roles | default "roles" -}}
{{- $role := index (index $pg $kind) .service -}}
{{- if $pg.cloudnativepg.enabled -}}
{{- /* The Cluster's read-write Service, its server certificate verified against the Cluster's CA. */ -}}
{{- $password := required (printf "postgres.%s.%s.password is required with postgres.cloudnativepg.enabled (the chart makes the role with it)" $kind .service) $role.password -}}
{{- printf "postgres://%s:%s@%s-rw.%s.svc:5432/%s?sslmode=verify-full&sslrootcert=%s/ca.crt" $role.username ($password | urlquery) (include "mileage.cnpgCluster" .root) .root.Release.Namespace $pg.database (include "mileage.postgresCaDir" .root) -}}
{{- else if $role.url -}}
{{- $role.url -}}
{{- else -}}
{{- $secret := ternary "postgres.existingMigrationSecret" "postgres.existingSecret" (eq $kind "ownerRoles") -}}
{{- $password := required (printf "postgres.%s.%s.password (or .url, or %s) is required" $kind .service $secret) $role.password -}}
{{- printf "postgres://%s:%s@%s:%v/%s?sslmode=%s" $role.username ($password | urlquery) $pg.host $pg.port $pg.database $pg.sslMode -}}
{{- end -}}
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
runAsUser: 10001
runAsGroup: 10001
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Environment of every long-running process: (dict "root" $ "component" "users"). */}}
{{- define "mileage.commonEnv" -}}
- { name: LOG_LEVEL, value: {{ .root.Values.logLevel | quote }} }
- { name: METRICS_HOST, value: "0.0.0.0" }
- { name: METRICS_PORT, value: {{ index (include "mileage.metricsPorts" .root | fromYaml) .component | quote }} }
- { name: SHUTDOWN_TIMEOUT_MS, value: {{ mul .root.Values.shutdownTimeoutSeconds 1000 | quote }} }
- { name: OTEL_SERVICE_NAME, value: mileage-{{ .component }} }
{{- with .root.Values.tracing }}
{{- if .otlpEndpoint }}
- { name: OTEL_EXPORTER_OTLP_ENDPOINT, value: {{ .otlpEndpoint | quote }} }
- { name: OTEL_TRACES_SAMPLER, value: parentbased_traceidratio }
- { name: OTEL_TRACES_SAMPLER_ARG, value: {{ .samplerRatio | toString | quote }} }
{{- else }}
- { name: OTEL_SDK_DISABLED, value: "true" }
{{- end }}
{{- end }}
{{- end -}}

{{- define "mileage.terminationGracePeriodSeconds" -}}
{{ add .Values.preStopSleepSeconds .Values.shutdownTimeoutSeconds 10 }}
{{- end -}}

{{- define "mileage.scimBaseUrl" -}}
{{- .Values.scim.baseUrl | default (printf "%s://%s/scim/v2" (ternary "https" "http" .Values.ingress.tls.enabled) .Values.ingress.host) -}}
{{- end -}}

{{/* A service's in-cluster address (host:port): (dict "root" $ "component" "users"). */}}
{{- define "mileage.grpcAddress" -}}
{{ include "mileage.componentName" . }}:{{ index (include "mileage.grpcPorts" .root | fromYaml) .component }}
{{- end -}}

{{/* The values of the chart's Secrets that one component's pods read: (dict "root" $ "component" "users"). A Secret's
change leaves the pod templates as they are, so their checksum (a pod annotation) rolls exactly the components that read
a changed value. Every other value a pod reads is in its template (environment, volumes) and rolls it by itself. */}}
{{- define "mileage.secretsChecksum" -}}
{{- $v := .root.Values -}}
{{- $read := list -}}
{{- if eq .component "gateway" -}}
{{- $read = list $v.gateway.cursorSecret $v.gateway.cursorSecretPrevious $v.gateway.actorAttestationSecret $v.redis.url -}}
{{- else -}}
{{- if and (not $v.postgres.existingSecret) (has .component (include "mileage.databaseServices" .root | fromYamlArray)) -}}
{{- $read = append $read (include "mileage.databaseUrl" (dict "root" .root "service" .component)) -}}
{{- end -}}
{{- if eq .component "scim" }}{{ $read = concat $read (list $v.gateway.actorAttestationSecret $v.gateway.actorAttestationSecretPrevious) }}{{ end -}}
{{- if eq .component "webhooks" }}{{ $read = append $read $v.webhooks.secretKey }}{{ end -}}
{{- end -}}
{{- toJson $read | sha256sum -}}
{{- end -}}

{{/* The pod of an operator's command, `node tools/devstack/dist/org.js <args>` in the gateway's image, with the
operator's gRPC identity: (dict "root" $ "args" (list "erase-due")). The CronJob's (operator.yaml); the one-off Jobs
of docs/operations-helm.md are the same pod with other args (check-rendered.py compares them). */}}
{{- define "mileage.operatorPodSpec" -}}
{{- $root := .root -}}
{{- $ctx := dict "root" $root "component" "operator" -}}
serviceAccountName: {{ include "mileage.componentName" $ctx }}
automountServiceAccountToken: false
enableServiceLinks: false
# A failed run's pod stays for its logs; the Job's backoffLimit starts another.
restartPolicy: Never
securityContext:
  {{- include "mileage.podSecurityContext" $root | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: org
    image: {{ include "mileage.image" (dict "root" $root "component" "gateway") }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    # The image's entrypoint (tini) runs `npm run org`'s script, tools/devstack/dist/org.js of the gateway's image.
    args: {{ concat (list "node" "tools/devstack/dist/org.js") .args | toJson }}
    securityContext:
      {{- include "mileage.containerSecurityContext" $root | nindent 6 }}
    env:
      # The four owners of an organization's data (the operator's calls, call-graph.yaml).
      {{- range $svc := list "users" "groups" "drives" "webhooks" }}
      - { name: {{ upper $svc }}_ADDRESS, value: {{ include "mileage.grpcAddress" (dict "root" $root "component" $svc) | quote }} }
      {{- end }}
      {{- if include "mileage.redisEnabled" $root }}
      # The gateways' Redis: an offboarding announces the organization's credentials revoked on it.
      - name: REDIS_URL
        valueFrom: { secretKeyRef: { name: {{ include "mileage.redisSecret" $root }}, key: redis-url } }
      {{- end }}
      {{- if $root.Values.grpcTls.enabled }}
      # The operator's certificate (SPIFFE id <prefix>operator) and the CA of every service.
      - { name: GRPC_TLS_CERT_FILE, value: /etc/mileage/grpc-tls/tls.crt }
      - { name: GRPC_TLS_KEY_FILE, value: /etc/mileage/grpc-tls/tls.key }
      - { name: GRPC_TLS_CA_FILE, value: /etc/mileage/grpc-tls/ca.crt }
      - { name: GRPC_TLS_SPIFFE_PREFIX, value: {{ include "mileage.spiffePrefix" $root | quote }} }
      {{- else }}
      - { name: GRPC_PLAINTEXT, value: "true" }
      {{- end }}
    resources:
      {{- toYaml $root.Values.operator.resources | nindent 6 }}
    volumeMounts:
      - { name: tmp, mountPath: /tmp }
      {{- if $root.Values.grpcTls.enabled }}
      - { name: grpc-tls, mountPath: /etc/mileage/grpc-tls, readOnly: true }
      {{- end }}
volumes:
  - name: tmp
    emptyDir: { sizeLimit: 16Mi }
  {{- if $root.Values.grpcTls.enabled }}
  - name: grpc-tls
    secret:
      secretName: {{ include "mileage.grpcTlsSecret" $ctx }}
      defaultMode: 0440
      items:
        - { key: tls.crt, path: tls.crt }
        - { key: tls.key, path: tls.key }
        - { key: ca.crt, path: ca.crt }
  {{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
