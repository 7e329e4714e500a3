// deno-lint-ignore-file no-explicit-any -- custom objects, reviews and Status bodies are untyped JSON
/**
 * CRD conversion webhooks on sim, as @kubernetes/client-node sees them (ADR 0028): a CRD whose
 * v1 (stored) says `spec.replicas` where its v2 says `spec.count`, converted by a webhook served
 * here on loopback, over http and over https with the CA as `caBundle`; written and read in
 * both versions. A webhook that answers Failure, one nothing listens for and one named by a
 * Service fail conversions with a 500, and only conversions.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals, assertStringIncludes } from "@std/assert";
import { writePki } from "../../cluster/certs.ts";
import { freePort } from "../../cluster/processes.ts";
import { serveOnLoopback } from "../loopback-server.ts";
import { collectWatch, statusOf, stillCluster, withSim } from "./helpers.ts";

const GROUP = "example.com";
const V1 = `${GROUP}/v1`;
const V2 = `${GROUP}/v2`;
const STORAGE = `widgets.${GROUP}`;

/** The field each version names the size with: the versions' one difference. */
const SIZE: Record<string, string> = { [V1]: "replicas", [V2]: "count" };

/** The webhook's conversion; it writes `spec` last, so keys come back in another order. */
function convert(object: any, desired: string): any {
  const { spec, ...rest } = object;
  const { [SIZE[object.apiVersion]]: size, ...others } = spec ?? {};
  return {
    ...rest,
    apiVersion: desired,
    spec: size === undefined ? others : { ...others, [SIZE[desired]]: size },
  };
}

interface Webhook {
  url: string;
  /** The ConversionReview requests it was sent. */
  requests: any[];
  stop(): Promise<void>;
}

/** A conversion webhook on loopback; `answer`, if it gives one, replaces the converting answer. */
async function startWebhook(
  options: { tls?: { cert: string; key: string }; answer?: (request: any) => any } = {},
): Promise<Webhook> {
  const requests: any[] = [];
  const server = await serveOnLoopback(async (req) => {
    const review = await req.json();
    const request = review.request;
    requests.push(request);
    const response = options.answer?.(request) ?? {
      uid: request.uid,
      result: { status: "Success" },
      convertedObjects: request.objects.map((o: any) => convert(o, request.desiredAPIVersion)),
    };
    return Response.json({ apiVersion: review.apiVersion, kind: "ConversionReview", response });
  }, options.tls);
  return { url: `${server.url}/convert`, requests, stop: server.stop };
}

function widgetCrd(clientConfig: k8s.ApiextensionsV1WebhookClientConfig) {
  const version = (name: string, storage: boolean) => ({
    name,
    served: true,
    storage,
    subresources: { status: {} },
    schema: {
      openAPIV3Schema: {
        type: "object",
        properties: {
          spec: { type: "object", properties: { [SIZE[`${GROUP}/${name}`]]: { type: "integer" } } },
          status: { type: "object", properties: { ready: { type: "integer" } } },
        },
      },
    },
  });
  return {
    metadata: { name: STORAGE },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget" },
      versions: [version("v1", true), version("v2", false)],
      conversion: {
        strategy: "Webhook",
        webhook: { conversionReviewVersions: ["v1"], clientConfig },
      },
    },
  };
}

async function installCrd(
  kc: k8s.KubeConfig,
  clientConfig: k8s.ApiextensionsV1WebhookClientConfig,
) {
  const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const existing = await extensions.readCustomResourceDefinition({ name: STORAGE })
    .catch(() => undefined);
  const body = widgetCrd(clientConfig);
  if (!existing) return await extensions.createCustomResourceDefinition({ body });
  return await extensions.replaceCustomResourceDefinition({
    name: STORAGE,
    body: { ...body, metadata: existing.metadata },
  });
}

/** Widgets through one version's endpoints, with client-node's CustomObjectsApi. */
function widgets(kc: k8s.KubeConfig, version: "v1" | "v2") {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const at = { group: GROUP, version, namespace: "default", plural: "widgets" };
  return {
    path: `/apis/${GROUP}/${version}/namespaces/default/widgets`,
    create: (spec: Record<string, number>, name = "w"): Promise<any> =>
      api.createNamespacedCustomObject({
        ...at,
        body: { apiVersion: `${GROUP}/${version}`, kind: "Widget", metadata: { name }, spec },
      }),
    get: (name = "w"): Promise<any> => api.getNamespacedCustomObject({ ...at, name }),
    list: (): Promise<any> => api.listNamespacedCustomObject(at),
    replace: (body: any): Promise<any> =>
      api.replaceNamespacedCustomObject({ ...at, name: body.metadata.name, body }),
    replaceStatus: (body: any): Promise<any> =>
      api.replaceNamespacedCustomObjectStatus({ ...at, name: body.metadata.name, body }),
    patch: (body: any, name = "w"): Promise<any> =>
      api.patchNamespacedCustomObject(
        { ...at, name, body },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      ),
    delete: (name = "w"): Promise<any> => api.deleteNamespacedCustomObject({ ...at, name }),
  };
}

const untilModified = (events: [string, any][]) => events.some(([type]) => type === "MODIFIED");

Deno.test("conversion webhook over http: written in v2, stored in v1, read, listed and watched in both", async () => {
  // Runs once, while the webhook converts: another writer's change landing mid-request.
  let during: (() => void) | undefined;
  const webhook = await startWebhook({
    answer: () => {
      const write = during;
      during = undefined;
      write?.();
      return undefined;
    },
  });
  try {
    await withSim({ behaviour: stillCluster }, async (sim, kc) => {
      await installCrd(kc, { url: webhook.url });
      const [v1, v2] = [widgets(kc, "v1"), widgets(kc, "v2")];
      const created = await v2.create({ count: 3 });
      assertEquals([created.apiVersion, created.spec], [V2, { count: 3 }]);
      const stored = sim.store.peek(STORAGE, "default", "w")!;
      assertEquals([stored.apiVersion, stored.spec], [V1, { replicas: 3 }]);
      assertEquals((await v1.get()).spec, { replicas: 3 });
      assertEquals((await v2.get()).spec, { count: 3 });
      await v1.create({ replicas: 4 }, "w2");
      const sizes = (list: any) =>
        list.items.map((o: any) => `${o.apiVersion} ${JSON.stringify(o.spec)}`);
      assertEquals(sizes(await v2.list()), [`${V2} {"count":3}`, `${V2} {"count":4}`]);
      assertEquals(sizes(await v1.list()), [`${V1} {"replicas":3}`, `${V1} {"replicas":4}`]);
      const calls = webhook.requests.length;
      await v1.get();
      await v1.list();
      assertEquals(
        webhook.requests.length,
        calls,
        "the storage version is read without the webhook",
      );

      // An update through v2, watched in both versions.
      let inV1: [string, any][] = [];
      const inV2 = await collectWatch(kc, v2.path, {}, untilModified, async () => {
        inV1 = await collectWatch(kc, v1.path, {}, untilModified, async () => {
          await v2.replace({ ...await v2.get(), spec: { count: 5 } });
        });
      });
      const seen = (events: [string, any][]) =>
        events.map(([type, o]) =>
          `${type} ${o.metadata.name} ${o.apiVersion} ${JSON.stringify(o.spec)}`
        );
      assertEquals(seen(inV2), [
        `ADDED w ${V2} {"count":3}`,
        `ADDED w2 ${V2} {"count":4}`,
        `MODIFIED w ${V2} {"count":5}`,
      ]);
      assertEquals(seen(inV1), [
        `ADDED w ${V1} {"replicas":3}`,
        `ADDED w2 ${V1} {"replicas":4}`,
        `MODIFIED w ${V1} {"replicas":5}`,
      ]);
      const status = await v2.replaceStatus({ ...await v2.get(), status: { ready: 5 } });
      assertEquals([status.status, status.spec, status.metadata.generation], [{ ready: 5 }, {
        count: 5,
      }, 2]);
      // w2 was written in v1, in the client's order of keys; the webhook answers in another.
      const w2 = await v1.replaceStatus({ ...await v1.get("w2"), status: { ready: 4 } });
      const again = await v2.replace(await v2.get("w2"));
      assertEquals(
        [again.metadata.resourceVersion, again.metadata.generation],
        [w2.metadata.resourceVersion, 1],
        "the same object through the webhook is a no-op write",
      );
      const patched = await v2.patch({ spec: { count: 7 } });
      assertEquals([patched.apiVersion, patched.spec, patched.status], [V2, { count: 7 }, {
        ready: 5,
      }]);
      assertEquals((await v1.get()).spec, { replicas: 7 });
      during = () => {
        const live = sim.store.get(STORAGE, "default", "w");
        sim.store.update(STORAGE, { ...live, status: { ready: 6 } });
      };
      const raced = await v2.patch({ spec: { count: 8 } });
      assertEquals(
        [raced.spec, raced.status],
        [{ count: 8 }, { ready: 6 }],
        "a patch starts again from a write that landed while it was converted",
      );
      const deleted = await v2.delete();
      assertEquals([deleted.apiVersion, deleted.spec], [V2, { count: 8 }]);
      assertEquals(sim.store.count(STORAGE), 1);
      assertEquals(
        [...new Set(webhook.requests.map((r) => r.desiredAPIVersion))].sort(),
        [V1, V2],
      );
      assertEquals(webhook.requests.every((r) => typeof r.uid === "string"), true);
    });
  } finally {
    await webhook.stop();
  }
});

Deno.test("conversion webhook over https: the caBundle is the CA its certificate is checked against", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-conversion-" });
  try {
    const pki = await writePki(`${dir}/pki`);
    const webhook = await startWebhook({
      tls: {
        cert: await Deno.readTextFile(pki.servingCertPath),
        key: await Deno.readTextFile(pki.servingKeyPath),
      },
    });
    try {
      await withSim({ behaviour: stillCluster }, async (_sim, kc) => {
        const caBundle = btoa(await Deno.readTextFile(pki.caCertPath));
        await installCrd(kc, { url: webhook.url, caBundle });
        const [v1, v2] = [widgets(kc, "v1"), widgets(kc, "v2")];
        await v2.create({ count: 2 });
        assertEquals((await v1.get()).spec, { replicas: 2 });
        assertEquals((await v2.get()).spec, { count: 2 });
        // Without the caBundle the webhook's certificate is not trusted.
        await installCrd(kc, { url: webhook.url });
        await v1.create({ replicas: 1 }, "w2");
        const untrusted = await statusOf(v2.get("w2"));
        assertEquals(untrusted.code, 500);
        assertStringIncludes(
          untrusted.body.message,
          `conversion webhook for ${V1}, Kind=Widget failed: Post "${webhook.url}?timeout=10s": `,
        );
        assertStringIncludes(untrusted.body.message, "certificate");
      });
    } finally {
      await webhook.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("conversion webhook answering Failure: v2 fails with a 500 naming it, v1 is served", async () => {
  const webhook = await startWebhook({
    answer: (request) => ({
      uid: request.uid,
      result: { status: "Failure", message: "widgets do not convert today" },
    }),
  });
  try {
    await withSim({ behaviour: stillCluster }, async (sim, kc) => {
      await installCrd(kc, { url: webhook.url });
      const [v1, v2] = [widgets(kc, "v1"), widgets(kc, "v2")];
      const write = await statusOf(v2.create({ count: 1 }));
      assertEquals([write.code, write.body.message], [
        500,
        `conversion webhook for ${V2}, Kind=Widget failed: widgets do not convert today`,
      ]);
      assertEquals(sim.store.count(STORAGE), 0);
      await v1.create({ replicas: 1 });
      assertEquals((await v1.get()).spec, { replicas: 1 });
      const failed =
        `conversion webhook for ${V1}, Kind=Widget failed: widgets do not convert today`;
      const read = await statusOf(v2.get());
      assertEquals([read.code, read.body.message], [500, failed]);
      const list = await statusOf(v2.list());
      assertEquals([list.code, list.body.message], [500, failed]);
      const watched = await collectWatch(kc, v2.path, {}, (events) => events.length > 0);
      assertEquals(
        watched.map(([type, o]) => [type, o.code, o.message]),
        [["ERROR", 500, failed]],
      );
    });
  } finally {
    await webhook.stop();
  }
});

Deno.test("conversion webhook unreachable or named by a Service: the CRD is served, conversions fail", async () => {
  await withSim({ behaviour: stillCluster }, async (_sim, kc) => {
    const url = `http://127.0.0.1:${freePort()}/convert`;
    await installCrd(kc, { url });
    const [v1, v2] = [widgets(kc, "v1"), widgets(kc, "v2")];
    await v1.create({ replicas: 1 });
    const unreachable = await statusOf(v2.get());
    assertEquals(unreachable.code, 500);
    assertStringIncludes(
      unreachable.body.message,
      `conversion webhook for ${V1}, Kind=Widget failed: Post "${url}?timeout=10s": `,
    );
    await installCrd(kc, {
      service: { namespace: "widgets", name: "converter", port: 443, path: "/convert" },
    });
    assertEquals((await v1.list()).items.length, 1);
    const service = await statusOf(v2.list());
    assertEquals([service.code, service.body.message], [
      500,
      `conversion webhook for ${V1}, Kind=Widget failed: sim resolves no Services, so it cannot call clientConfig.service widgets/converter; give the CRD a clientConfig.url`,
    ]);
  });
});
