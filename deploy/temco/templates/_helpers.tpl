{{/* The release's resource name prefix, at most 63 characters. */}}
{{- define "temco.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "temco.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component (api or worker): pass (list $ "api"). */}}
{{- define "temco.selector" -}}
app.kubernetes.io/name: {{ (index . 0).Chart.Name }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "temco.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "temco.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "temco.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secrets holding the MongoDB URI and the encryption keys: given, or the chart's own. */}}
{{- define "temco.mongoSecret" -}}
{{- if .Values.mongodb.existingSecret -}}
{{ .Values.mongodb.existingSecret }}
{{- else if .Values.mongodb.uri -}}
{{ include "temco.fullname" . }}-mongodb
{{- else -}}
{{ fail "mongodb.uri or mongodb.existingSecret is required: temco stores its resources in MongoDB" }}
{{- end -}}
{{- end -}}

{{- define "temco.keysSecret" -}}
{{- if .Values.encryption.existingSecret -}}
{{ .Values.encryption.existingSecret }}
{{- else if .Values.encryption.keys -}}
{{ include "temco.fullname" . }}-encryption
{{- else -}}
{{ fail "encryption.existingSecret or encryption.keys is required: kubeconfigs and credentials are stored encrypted" }}
{{- end -}}
{{- end -}}

{{/* Environment, volumes and mounts shared by api and worker. */}}
{{- define "temco.env" -}}
- name: TEMCO_MONGO_URI
  valueFrom:
    secretKeyRef:
      name: {{ include "temco.mongoSecret" . }}
      key: {{ if .Values.mongodb.existingSecret }}{{ .Values.mongodb.existingSecretKey }}{{ else }}uri{{ end }}
- name: TEMCO_MONGO_DB
  value: {{ .Values.mongodb.database | quote }}
- name: TEMCO_KEY_FILE
  value: /etc/temco/keys/encryption.keys
- name: TEMCO_ENCRYPT_PAYLOADS
  value: {{ .Values.encryption.payloads | quote }}
- name: TEMCO_TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMCO_TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: TEMCO_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
{{- with .Values.temporal.tls }}
{{- if or .enabled .caSecret .clientSecret }}
- name: TEMCO_TEMPORAL_TLS
  value: "true"
{{- end }}
{{- if .caSecret }}
- name: TEMCO_TEMPORAL_TLS_CA
  value: /etc/temco/temporal-ca/ca.crt
{{- end }}
{{- if .clientSecret }}
- name: TEMCO_TEMPORAL_TLS_CERT
  value: /etc/temco/temporal-client/tls.crt
- name: TEMCO_TEMPORAL_TLS_KEY
  value: /etc/temco/temporal-client/tls.key
{{- end }}
{{- if .serverName }}
- name: TEMCO_TEMPORAL_TLS_SERVER_NAME
  value: {{ .serverName | quote }}
{{- end }}
{{- end }}
{{- with .Values.policyEngineAllow }}
- name: TEMCO_POLICY_ENGINE_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.artifactHostsAllow }}
- name: TEMCO_ARTIFACT_HOSTS_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.notifyHostsAllow }}
- name: TEMCO_NOTIFY_HOSTS_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
- name: HOME
  value: /tmp
{{- end -}}

{{- define "temco.volumeMounts" -}}
- name: keys
  mountPath: /etc/temco/keys
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- if .Values.temporal.tls.caSecret }}
- name: temporal-ca
  mountPath: /etc/temco/temporal-ca
  readOnly: true
{{- end }}
{{- if .Values.temporal.tls.clientSecret }}
- name: temporal-client
  mountPath: /etc/temco/temporal-client
  readOnly: true
{{- end }}
{{- if .Values.mongodb.tls.caSecret }}
- name: mongodb-tls
  mountPath: /etc/temco/mongodb-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "temco.volumes" -}}
- name: keys
  secret:
    secretName: {{ include "temco.keysSecret" . }}
    items: [{key: encryption.keys, path: encryption.keys}]
- name: tmp
  emptyDir: {}
{{- if .Values.temporal.tls.caSecret }}
- name: temporal-ca
  secret:
    secretName: {{ .Values.temporal.tls.caSecret }}
    items: [{key: ca.crt, path: ca.crt}]
{{- end }}
{{- if .Values.temporal.tls.clientSecret }}
- name: temporal-client
  secret:
    secretName: {{ .Values.temporal.tls.clientSecret }}
    items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
{{- end }}
{{- if .Values.mongodb.tls.caSecret }}
- name: mongodb-tls
  secret:
    secretName: {{ .Values.mongodb.tls.caSecret }}
    items: [{key: ca.crt, path: ca.crt}]
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by api and worker. */}}
{{- define "temco.podSpec" -}}
serviceAccountName: {{ include "temco.serviceAccountName" . }}
automountServiceAccountToken: false
{{- include "temco.podSettings" . }}
{{- end -}}

{{/* The hub's: its own ServiceAccount, whose token it needs to reach this cluster. */}}
{{- define "temco.hubPodSpec" -}}
serviceAccountName: {{ include "temco.fullname" . }}-hub
automountServiceAccountToken: true
{{- include "temco.podSettings" . }}
{{- end -}}

{{/* Pull secrets, security context and scheduling, for every component. */}}
{{- define "temco.podSettings" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod annotations: a checksum of the chart's Secrets rolls the pods when they change. */}}
{{- define "temco.podAnnotations" -}}
checksum/secrets: {{ include (print .Template.BasePath "/secrets.yaml") . | sha256sum }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A probe from values, its httpGet given the scheme: pass (list probe scheme). */}}
{{- define "temco.probe" -}}
{{- $probe := deepCopy (index . 0) -}}
{{- if $probe.httpGet -}}
{{- $_ := set $probe.httpGet "scheme" (index . 1) -}}
{{- end -}}
{{- toYaml $probe -}}
{{- end -}}

{{/* The api's authentication settings; refuses an install with authentication half set up. */}}
{{- define "temco.authEnv" -}}
{{- with .Values.api.auth }}
{{- if .enabled }}
{{- if or (not .issuer) (not .audience) (and (not .jwksUrl) (not .publicKeySecret)) }}
{{- fail "api.auth needs issuer, audience and jwksUrl or publicKeySecret (or api.auth.enabled=false behind another authenticating proxy)" }}
{{- end }}
- name: TEMCO_AUTH_ISSUER
  value: {{ .issuer | quote }}
- name: TEMCO_AUTH_AUDIENCE
  value: {{ .audience | quote }}
{{- if .jwksUrl }}
- name: TEMCO_AUTH_JWKS_URL
  value: {{ .jwksUrl | quote }}
{{- else }}
- name: TEMCO_AUTH_PUBLIC_KEY_FILE
  value: /etc/temco/auth/keys.pem
{{- end }}
- name: TEMCO_AUTH_ROLES_CLAIM
  value: {{ .rolesClaim | quote }}
- name: TEMCO_AUTH_ADMIN_ROLE
  value: {{ .adminRole | quote }}
- name: TEMCO_AUTH_CONTROLLER_ROLE
  value: {{ .controllerRole | quote }}
{{- end }}
{{- end }}
{{- with .Values.api.codecCorsOrigins }}
- name: TEMCO_CODEC_CORS_ORIGINS
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.api.workflowHostsAllow }}
- name: TEMCO_WORKFLOW_HOSTS_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.api.workflowTaskQueues }}
- name: TEMCO_WORKFLOW_TASK_QUEUES
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.api.caCertOrganizations }}
- name: TEMCO_CA_CERT_ORGANIZATIONS
  value: {{ join "," . | quote }}
{{- end }}
- name: TEMCO_LIVE_READS_PER_MINUTE
  value: {{ .Values.api.liveReadsPerMinute | quote }}
- name: TEMCO_API_MAX_STORE_REQUESTS
  value: {{ .Values.api.maxStoreRequests | quote }}
{{- end -}}

{{/* The api the hub calls: given, or this release's api Service. */}}
{{- define "temco.hubAPI" -}}
{{- if .Values.hub.api -}}
{{ .Values.hub.api }}
{{- else -}}
{{ ternary "https" "http" (not (empty .Values.api.tls.existingSecret)) }}://{{ include "temco.fullname" . }}-api.{{ .Release.Namespace }}.svc:{{ .Values.api.service.port }}
{{- end -}}
{{- end -}}

{{/* The hub's token Secret; refuses a hub without one in front of an authenticating api. */}}
{{- define "temco.hubTokenSecret" -}}
{{- if .Values.hub.tokenSecret -}}
{{ .Values.hub.tokenSecret }}
{{- else if .Values.api.auth.enabled -}}
{{ fail "hub.tokenSecret is required while api.auth is on: an existing Secret holding an admin's bearer token for the hub's calls to the api" }}
{{- end -}}
{{- end -}}

{{/* The names the api is called by (TEMCO_API_HOSTS): its Service's, the host of hub.api
when given, and api.hosts. Probes and Prometheus call it by the pod's IP address, which
needs no name. */}}
{{- define "temco.apiHosts" -}}
{{- $svc := printf "%s-api" (include "temco.fullname" .) -}}
{{- $ns := .Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) -}}
{{- with .Values.hub.api -}}
{{- $hosts = append $hosts (urlParse .).hostname -}}
{{- end -}}
{{- concat $hosts .Values.api.hosts | uniq | join "," -}}
{{- end -}}
