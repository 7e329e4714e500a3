// deno-lint-ignore-file no-explicit-any -- AdmissionReviews are untyped JSON
/**
 * Admission webhooks as the API server calls them, on both targets (issue 37: sim calls them as
 * kube-apiserver does): webhooks served here on loopback over https, registered with the CA as
 * `caBundle`; what kubectl is answered is compared with the real API server's words.
 */
import { assert, assertEquals, assertMatch } from "@std/assert";
import { writePki } from "../../cluster/certs.ts";
import { freePort } from "../../cluster/processes.ts";
import { serveOnLoopback } from "../loopback-server.ts";
import { refused } from "./edgeroll-scenarios.ts";
import type { Kube } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";

const ns = "e2e-admission";
const configuration = `edgeroll-e2e-admission`;
/** The label a ConfigMap carries to be seen by the webhooks (their objectSelector). */
const watched = "edgeroll.test/admission";

interface Webhooks {
  url: string;
  caBundle: string;
  /** The AdmissionReview requests each path was sent. */
  requests: Record<string, any[]>;
  stop(): Promise<void>;
}

/**
 * `/mutate` adds the label `mutated=yes` (a JSON patch) with a warning; `/validate` refuses a
 * ConfigMap with a `forbidden` key, with code 403 and its own message; `/tag-X` adds the label
 * `X=yes` when it is absent.
 */
async function serveWebhooks(dir: string): Promise<Webhooks> {
  const pki = await writePki(dir);
  const requests: Record<string, any[]> = { "/mutate": [], "/validate": [] };
  const server = await serveOnLoopback(async (req) => {
    const path = new URL(req.url).pathname;
    const review = await req.json();
    const request = review.request;
    (requests[path] ??= []).push(request);
    const response: Record<string, unknown> = { uid: request.uid, allowed: true };
    const tag = path.match(/^\/tag-(\w+)$/)?.[1];
    if (tag && request.object.metadata.labels?.[tag] === undefined) {
      const patch = request.object.metadata.labels
        ? [{ op: "add", path: `/metadata/labels/${tag}`, value: "yes" }]
        : [{ op: "add", path: "/metadata/labels", value: { [tag]: "yes" } }];
      response.patchType = "JSONPatch";
      response.patch = btoa(JSON.stringify(patch));
    } else if (path === "/slow") {
      await new Promise((resolve) => setTimeout(resolve, 2500));
    } else if (path === "/mutate") {
      const labels = request.object.metadata.labels ?? {};
      const patch = [{ op: "add", path: "/metadata/labels/mutated", value: "yes" }];
      if (!labels.mutated) {
        response.patchType = "JSONPatch";
        response.patch = btoa(JSON.stringify(patch));
        response.warnings = ["labelled by the e2e webhook"];
      }
    } else if (path === "/validate" && request.object?.data?.forbidden !== undefined) {
      response.allowed = false;
      response.status = { code: 403, message: "the key forbidden is not allowed here" };
    }
    return Response.json({ apiVersion: review.apiVersion, kind: "AdmissionReview", response });
  }, {
    cert: await Deno.readTextFile(pki.servingCertPath),
    key: await Deno.readTextFile(pki.servingKeyPath),
  });
  return {
    url: server.url,
    caBundle: btoa(await Deno.readTextFile(pki.caCertPath)),
    requests,
    stop: server.stop,
  };
}

function webhook(name: string, url: string, caBundle: string | undefined, extra: object = {}) {
  return {
    name,
    clientConfig: { url, ...(caBundle ? { caBundle } : {}) },
    rules: [{
      apiGroups: [""],
      apiVersions: ["v1"],
      operations: ["CREATE", "UPDATE"],
      resources: ["configmaps"],
    }],
    namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
    objectSelector: { matchLabels: { [watched]: "on" } },
    sideEffects: "None",
    admissionReviewVersions: ["v1"],
    ...extra,
  };
}

function configMap(name: string, label: string | undefined, data?: Record<string, string>) {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: ns, ...(label ? { labels: { [watched]: label } } : {}) },
    ...(data ? { data } : {}),
  };
}

async function labelsOf(kube: Kube, name: string): Promise<Record<string, string>> {
  const cm = await kube.json<any>(["--namespace", ns, "get", "configmap", name]);
  return cm.metadata.labels ?? {};
}

export const admissionScenario: Scenario = {
  name: "admission webhooks mutate, refuse, and fail closed or open by their policy",
  async run(_target, kube) {
    const dir = await Deno.makeTempDir({ prefix: "edgeroll-e2e-admission-" });
    const hooks = await serveWebhooks(dir);
    const closedPort = freePort(); // nothing listens there
    try {
      await kube.createNamespace(ns);
      const closed = `https://127.0.0.1:${closedPort}/closed`;
      await kube.apply({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingWebhookConfiguration",
        metadata: { name: configuration },
        webhooks: [
          webhook("mutate.edgeroll.test", `${hooks.url}/mutate`, hooks.caBundle),
          // Unreachable: passed over for the label value "on", refusing for "closed".
          webhook("ignored.edgeroll.test", closed, undefined, { failurePolicy: "Ignore" }),
          webhook("closed.edgeroll.test", closed, undefined, {
            objectSelector: { matchLabels: { [watched]: "closed" } },
          }),
          // Answers after 2.5 s, past its 1 s: passed over for "slow-open", refusing for "slow".
          ...(["slow-open", "slow"] as const).map((value) =>
            webhook(`${value}.edgeroll.test`, `${hooks.url}/slow`, hooks.caBundle, {
              objectSelector: { matchLabels: { [watched]: value } },
              timeoutSeconds: 1,
              failurePolicy: value === "slow" ? "Fail" : "Ignore",
            })
          ),
        ],
      });
      await kube.apply({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: configuration },
        webhooks: [webhook("validate.edgeroll.test", `${hooks.url}/validate`, hooks.caBundle)],
      });
      const stored = await kube.json<any>(["get", "mutatingwebhookconfiguration", configuration]);
      // The API server's defaults.
      assertEquals(
        stored.webhooks.map((w: any) => [w.failurePolicy, w.matchPolicy, w.timeoutSeconds]),
        [
          ["Fail", "Equivalent", 10],
          ["Ignore", "Equivalent", 10],
          ["Fail", "Equivalent", 10],
          ["Ignore", "Equivalent", 1],
          ["Fail", "Equivalent", 1],
        ],
      );
      assertEquals(stored.webhooks[0].reinvocationPolicy, "Never");
      assertEquals(stored.webhooks[0].rules[0].scope, "*");

      // Watched: patched by the mutating webhook, with its warning; the unreachable Ignore
      // webhook passed over. Unwatched: no webhook called.
      const applied = await kube.run(
        ["apply", "-f", "-"],
        JSON.stringify(configMap("watched", "on")),
      );
      assert(applied.includes("configmap/watched created"), applied);
      assertEquals((await labelsOf(kube, "watched")).mutated, "yes");
      await kube.apply(configMap("unwatched", undefined));
      assertEquals((await labelsOf(kube, "unwatched")).mutated, undefined);
      const mutateRequests = hooks.requests["/mutate"];
      assertEquals(mutateRequests.map((r) => `${r.operation} ${r.name}`), ["CREATE watched"]);
      const [first] = mutateRequests;
      assertEquals(first.kind, { group: "", version: "v1", kind: "ConfigMap" });
      assertEquals(first.resource, { group: "", version: "v1", resource: "configmaps" });
      assertEquals(first.namespace, ns);
      assertEquals(first.oldObject, null);
      assertEquals(first.dryRun, false);
      assertEquals(first.options?.kind, "CreateOptions");
      // The validating webhook saw the object as mutated.
      assertEquals(hooks.requests["/validate"][0]?.object?.metadata?.labels?.mutated, "yes");

      // An update is sent with the old object.
      await kube.patch(ns, "configmap", "watched", "merge", { data: { colour: "blue" } });
      const update = mutateRequests.at(-1);
      assertEquals(update.operation, "UPDATE");
      assertEquals(update.oldObject.data, undefined);
      assertEquals(update.object.data, { colour: "blue" });

      // Refused by the validating webhook: its code and message; nothing stored.
      const denied = await refusedWith(kube, configMap("denied", "on", { forbidden: "x" }));
      assertMatch(
        denied,
        /^Warning: labelled by the e2e webhook\nError from server: error when creating "STDIN": admission webhook "validate\.edgeroll\.test" denied the request: the key forbidden is not allowed here/,
      );
      assertEquals(await exists(kube, "denied"), false);

      // Fails closed: the API server's 500, naming the webhook and the URL it could not reach.
      const failed = await refusedWith(kube, configMap("failed", "closed"));
      assertMatch(
        failed,
        new RegExp(
          `^Error from server \\(InternalError\\): error when creating "STDIN": Internal error occurred: failed calling webhook "closed\\.edgeroll\\.test": failed to call webhook: Post "https://127\\.0\\.0\\.1:${closedPort}/closed\\?timeout=10s": `,
        ),
      );
      assertEquals(await exists(kube, "failed"), false);

      // Past its timeout: passed over under Ignore; under Fail, the same 500, its URL asking for 1 s.
      await kube.apply(configMap("slow-open", "slow-open"));
      assertEquals(await exists(kube, "slow-open"), true);
      const late = await refusedWith(kube, configMap("slow", "slow"));
      assertMatch(
        late,
        new RegExp(
          `^Error from server \\(InternalError\\): error when creating "STDIN": Internal error occurred: failed calling webhook "slow\\.edgeroll\\.test": failed to call webhook: Post "${
            hooks.url.replaceAll(".", "\\.")
          }/slow\\?timeout=1s": `,
        ),
      );
      assertEquals(await exists(kube, "slow"), false);
    } finally {
      await kube.run([
        "delete",
        "--ignore-not-found",
        `mutatingwebhookconfiguration/${configuration}`,
        `validatingwebhookconfiguration/${configuration}`,
      ]).catch(() => {});
      await kube.run(["delete", "namespace", ns, "--wait=false"]).catch(() => {});
      await hooks.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
};

const group = "e2e.edgeroll.test";
const versionsConfiguration = "edgeroll-e2e-admission-versions";
const gadgetNs = "e2e-admission-versions";

/** Gadgets: two served versions, v1 stored, converted by the API server alone (strategy None). */
const gadgetCrd = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: `gadgets.${group}` },
  spec: {
    group,
    scope: "Namespaced",
    names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
    versions: ["v1", "v2"].map((name) => ({
      name,
      served: true,
      storage: name === "v1",
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: { spec: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
        },
      },
    })),
  },
};

export const admissionVersionsScenario: Scenario = {
  name:
    "admission webhooks see a request in the version their rules name, and IfNeeded ones look again",
  async run(_target, kube) {
    const dir = await Deno.makeTempDir({ prefix: "edgeroll-e2e-admission-" });
    const hooks = await serveWebhooks(dir);
    const gadgets = (tag: string, reinvocationPolicy: string) => ({
      name: `tag-${tag}.edgeroll.test`,
      clientConfig: { url: `${hooks.url}/tag-${tag}`, caBundle: hooks.caBundle },
      rules: [{
        apiGroups: [group],
        apiVersions: ["v1"],
        operations: ["CREATE"],
        resources: ["gadgets"],
      }],
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
      reinvocationPolicy,
    });
    try {
      await kube.createNamespace(gadgetNs);
      await kube.apply(gadgetCrd);
      await kube.run(["wait", "--for=condition=Established", `crd/gadgets.${group}`]);
      await kube.apply({
        apiVersion: "admissionregistration.k8s.io/v1",
        kind: "MutatingWebhookConfiguration",
        metadata: { name: versionsConfiguration },
        webhooks: [gadgets("a", "IfNeeded"), gadgets("b", "Never")],
      });
      // Written in v2; the rules name v1 only (matchPolicy Equivalent, the default).
      await kube.apply({
        apiVersion: `${group}/v2`,
        kind: "Gadget",
        metadata: { name: "g", namespace: gadgetNs },
        spec: { size: 1 },
      });
      const [first, again] = hooks.requests["/tag-a"];
      assertEquals(first.kind, { group, version: "v1", kind: "Gadget" });
      assertEquals(first.requestKind, { group, version: "v2", kind: "Gadget" });
      assertEquals(first.resource, { group, version: "v1", resource: "gadgets" });
      assertEquals(first.requestResource, { group, version: "v2", resource: "gadgets" });
      assertEquals(first.object.apiVersion, `${group}/v1`);
      // b changed the object after a: a, IfNeeded, is called once more and sees b's label.
      assertEquals(hooks.requests["/tag-a"].length, 2);
      assertEquals(again.object.metadata.labels, { a: "yes", b: "yes" });
      assertEquals(hooks.requests["/tag-b"].length, 1);
      const stored = await kube.json<any>(
        ["--namespace", gadgetNs, "get", `gadgets.v2.${group}`, "g"],
      );
      assertEquals(stored.apiVersion, `${group}/v2`);
      assertEquals(stored.metadata.labels, { a: "yes", b: "yes" });
    } finally {
      await kube.run([
        "delete",
        "--ignore-not-found",
        `mutatingwebhookconfiguration/${versionsConfiguration}`,
        `crd/gadgets.${group}`,
      ]).catch(() => {});
      await kube.run(["delete", "namespace", gadgetNs, "--wait=false"]).catch(() => {});
      await hooks.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
};

/** kubectl apply of `object`, expected to be refused: its stderr. */
function refusedWith(kube: Kube, object: unknown): Promise<string> {
  return refused(kube, ["apply", "-f", "-"], JSON.stringify(object));
}

async function exists(kube: Kube, name: string): Promise<boolean> {
  const out = await kube.run(
    ["--namespace", ns, "get", "configmap", name, "--ignore-not-found", "-o", "name"],
  );
  return out.trim() !== "";
}
