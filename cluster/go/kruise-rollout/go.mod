// Pins the Kruise Rollout module that `cluster/build.sh --kruise-rollout` builds from: its manager
// (main.go) and its end-to-end test binary (test/e2e), with the CRDs, webhook configurations and
// test data beside them in cluster/bin/kruise-rollout-config (issue 37). As for Kruise
// (cluster/go/kruise-e2e), the script reads the version from the require line below, fetches that
// module, checked against go.sum, and compiles inside a copy of it with its own go.mod and go.sum,
// unmodified; nothing is built from this module itself.
module edgeroll.local/kruise-rollout

go 1.23.0

require github.com/openkruise/rollouts v0.6.2
