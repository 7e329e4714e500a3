// Pins the OpenKruise module that `cluster/build.sh` builds from: its end-to-end test binary,
// kruise-e2e.test (`--kruise`), and kruise-manager (`--kruise-manager`, ADR 0030). The script
// reads the version from the require line below (the one place it is kept), fetches that module,
// checked against go.sum, and compiles test/e2e or the main package inside a copy of it with the
// module's own go.mod and go.sum, unmodified. Nothing is built from this module itself: a
// main module of ours would drop Kruise's replace directives (k8s.io/* at v0.32.10), which apply
// only when Kruise is the main module.
module edgeroll.local/kruise-e2e

go 1.23.0

require github.com/openkruise/kruise v1.9.1
