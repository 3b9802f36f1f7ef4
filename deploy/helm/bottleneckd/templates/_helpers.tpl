{{- define "bottleneckd.labels" -}}
app.kubernetes.io/name: bottleneckd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "bottleneckd.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- end -}}

{{/* the exporter's configuration, all from the environment (BOTTLENECKD_*) */}}
{{- define "bottleneckd.env" -}}
- name: POD_IP
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- name: NODE_NAME
  valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
- {name: BOTTLENECKD_SERVE_BIND, value: "$(POD_IP):{{ .Values.port }}"}
- {name: BOTTLENECKD_SERVE_QUIET, value: "1"}
- {name: BOTTLENECKD_LOG_LEVEL, value: {{ .Values.logLevel | quote }}}
- {name: BOTTLENECKD_LOG_FORMAT, value: {{ .Values.logFormat | quote }}}
{{- if .Values.webConfig.enabled }}
- {name: BOTTLENECKD_SERVE_WEB_CONFIG, value: /etc/bottleneckd/web-config.yml}
{{- end }}
- {name: NVIDIA_VISIBLE_DEVICES, value: all}            # NVML of every GPU, no GPU allocated
- {name: NVIDIA_DRIVER_CAPABILITIES, value: utility}
{{- end -}}

{{- define "bottleneckd.probes" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.clientCertRequired }}
livenessProbe:
  tcpSocket: {port: metrics}
  periodSeconds: 30
readinessProbe:
  tcpSocket: {port: metrics}
  periodSeconds: 10
{{- else }}
livenessProbe:
  httpGet: {path: /-/healthy, port: metrics, scheme: {{ ternary "HTTPS" "HTTP" .Values.webConfig.enabled }}}
  periodSeconds: 30
  timeoutSeconds: 5
readinessProbe:
  httpGet: {path: /-/ready, port: metrics, scheme: {{ ternary "HTTPS" "HTTP" .Values.webConfig.enabled }}}
  periodSeconds: 10
  timeoutSeconds: 5
{{- end }}
{{- end -}}

{{- define "bottleneckd.webConfigSecret" -}}
{{ .Values.webConfig.create | ternary (printf "%s-web-config" .Release.Name) .Values.webConfig.existingSecret }}
{{- end -}}

{{- define "bottleneckd.endpoint" -}}
port: metrics
path: /metrics
interval: {{ .Values.scrape.interval }}
scheme: {{ ternary .Values.scrape.scheme "http" .Values.webConfig.enabled }}
honorLabels: true  # keep bottleneckd_job_info's pod/namespace (the training pod's), as dcgm-exporter's chart does
{{- if .Values.webConfig.enabled }}
tlsConfig: {{ toYaml .Values.scrape.tlsConfig | nindent 2 }}
{{- with .Values.scrape.basicAuth }}
basicAuth: {{ toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}
