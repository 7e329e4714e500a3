//go:build tools

// Package e2e only pins the upstream e2e suite's module graph: `go test -c
// k8s.io/kubernetes/test/e2e` builds the binary from it (cluster/build.sh --e2e).
package e2e

import _ "k8s.io/kubernetes/test/e2e"
