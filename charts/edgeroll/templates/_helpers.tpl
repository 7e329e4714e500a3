{{/* The labels of every object: kustomize's (manifests/base) and Helm's own. */}}
{{- define "edgeroll.labels" -}}
app.kubernetes.io/part-of: edgeroll
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The edgeroll image, and its pull policy when one is set. */}}
{{- define "edgeroll.image" -}}
image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* The controller's Service name inside the cluster. */}}
{{- define "edgeroll.controllerHost" -}}
{{ printf "edgeroll-controller.%s.svc" .Release.Namespace }}
{{- end }}

{{/* A container's hardening: the same for every edgeroll container. */}}
{{- define "edgeroll.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end }}

{{/* The pod's: not root, the runtime's seccomp profile. */}}
{{- define "edgeroll.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: {{ . }}
  seccompProfile:
    type: RuntimeDefault
{{- end }}

{{/* A projected token for the controller's audience, and its CA: what callers mount. */}}
{{- define "edgeroll.callerVolumes" -}}
- name: controller-ca
  secret:
    secretName: {{ .Values.controller.tlsSecretName }}
    items:
      - key: ca.crt
        path: ca.crt
- name: controller-token
  projected:
    sources:
      - serviceAccountToken:
          audience: {{ .Values.controller.audience }}
          expirationSeconds: 3600
          path: token
{{- end }}
