/**
 * The kustomize base, the Knative overlay and the edge agent render with `kubectl kustomize`
 * and pass a server-side dry-run against the simulator: the API server validates every object.
 */
import { pullSetLabel } from "../api/image-pull.ts";
import { assertEquals, assertStringIncludes } from "@std/assert";
import { parseAllDocuments } from "yaml";
import { kubectl, withSim } from "./sim/helpers.ts";
import { APISERVERSOURCE_CRD, kinds, kustomize, root, split } from "./kustomize.ts";

Deno.test("manifests: base renders the controller behind its Lease, tick, RBAC and CRD; no relay", async () => {
  const rendered = kinds(await kustomize("base"));
  for (
    const expected of [
      "CronJob/edgeroll-tick",
      "CustomResourceDefinition/advanceddaemonsets.apps.edgeroll.dev",
      "Deployment/edgeroll-controller",
      "Namespace/edgeroll-system",
      "Role/edgeroll-controller-lease",
      "Service/edgeroll-controller",
    ]
  ) assertEquals(rendered.includes(expected), true, `${expected} missing from ${rendered}`);
  // The holder of the Lease watches for itself (ADR 0038): the relay is an overlay's.
  assertEquals(rendered.includes("Deployment/edgeroll-relay"), false);
  assertEquals(
    kinds(await kustomize("overlays/relay")).includes("Deployment/edgeroll-relay"),
    true,
  );
  const controller = parseAllDocuments(await kustomize("base")).map((doc) => doc.toJS())
    .find((o) => o.kind === "Deployment" && o.metadata.name === "edgeroll-controller");
  const container = controller.spec.template.spec.containers[0];
  assertEquals(controller.spec.replicas, 2);
  assertEquals(container.args.includes("--lease=$(POD_NAMESPACE)/edgeroll-controller"), true);
  assertEquals(
    container.env.map((e: { name: string; valueFrom: unknown }) => [e.name, e.valueFrom]),
    [
      ["POD_NAME", { fieldRef: { fieldPath: "metadata.name" } }],
      ["POD_NAMESPACE", { fieldRef: { fieldPath: "metadata.namespace" } }],
    ],
  );
});

Deno.test("manifests: knative overlay adds an ApiServerSource", async () => {
  const rendered = kinds(await kustomize("overlays/knative"));
  assertEquals(rendered.includes("Deployment/edgeroll-relay"), false);
  assertEquals(rendered.includes("ApiServerSource/edgeroll-events"), true);
  // Pods of sets (their revision label) and of image pulls (ADR 0034): what keys.ts maps to sets.
  const source = parseAllDocuments(await kustomize("overlays/knative")).map((doc) => doc.toJS())
    .find((o) => o.kind === "ApiServerSource");
  const podLabels = source.spec.resources
    .filter((r: { kind: string }) => r.kind === "Pod")
    .map((r: { selector: { matchExpressions: { key: string }[] } }) =>
      r.selector.matchExpressions.map((e) => e.key)
    );
  assertEquals(podLabels, [["controller-revision-hash"], [pullSetLabel]]);
});

Deno.test("manifests: edge-agent runs the controller's image on every node, on loopback, as its node", async () => {
  const objects = parseAllDocuments(await kustomize("edge-agent")).map((doc) => doc.toJS());
  const controller = parseAllDocuments(await kustomize("base")).map((doc) => doc.toJS())
    .find((o) => o.kind === "Deployment" && o.metadata.name === "edgeroll-controller");
  // No Secret shared by every node, and no role of its own: the node's credentials are the role.
  assertEquals(objects.map((o) => o.kind), ["DaemonSet"]);
  const set = objects[0];
  assertEquals(set.metadata.namespace, "edgeroll-system");
  const pod = set.spec.template.spec;
  const [container] = pod.containers;
  assertEquals(container.image, controller.spec.template.spec.containers[0].image);
  assertEquals(pod.hostNetwork, true);
  assertEquals(pod.automountServiceAccountToken, false);
  assertEquals(pod.serviceAccountName, undefined);
  assertEquals(pod.tolerations, [{ operator: "Exists", effect: "NoSchedule" }]);
  assertEquals(container.args.includes("--node=$(NODE_NAME)"), true);
  assertEquals(container.env, [
    { name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
  ]);
  // Every file an argument names is a read-only mount of the same path from the node.
  const hostPaths = new Map<string, string>(
    pod.volumes.map((v: { name: string; hostPath: { path: string } }) => [v.name, v.hostPath.path]),
  );
  const mounted = (file: string) =>
    container.volumeMounts.some((m: { name: string; mountPath: string; readOnly: boolean }) =>
      m.readOnly && file.startsWith(m.mountPath) && hostPaths.get(m.name) === m.mountPath
    );
  const argument = (flag: string) =>
    container.args.find((a: string) => a.startsWith(flag))?.slice(flag.length);
  const kubeconfig = argument("--kubeconfig=");
  assertEquals(kubeconfig !== undefined && mounted(kubeconfig), true, "the kubeconfig is mounted");
  // The state directory (pod cache, queued upgrades) outlives the pod: the node's, writable.
  const stateDir = argument("--state-dir=");
  const stateMount = container.volumeMounts.find((m: { mountPath: string }) =>
    m.mountPath === stateDir
  );
  assertEquals([stateMount?.readOnly, hostPaths.get(stateMount?.name)], [undefined, stateDir]);
  assertEquals(container.args.includes(`--allow-write=${stateDir}`), true);
  assertEquals(mounted("/var/lib/kubelet/pki/kubelet-client-current.pem"), true);
  for (const probe of [container.livenessProbe, container.readinessProbe]) {
    assertEquals(probe.httpGet, { host: "127.0.0.1", path: "/healthz", port: "ota" });
  }
});

const dryRuns: [dir: string, created: string][] = [
  ["base", "deployment.apps/edgeroll-controller"],
  ["overlays/knative", "deployment.apps/edgeroll-controller"],
  ["overlays/relay", "deployment.apps/edgeroll-relay"],
  ["edge-agent", "daemonset.apps/edgeroll-edge"],
];

for (const [dir, created] of dryRuns) {
  Deno.test(`manifests: ${dir} passes a server-side dry-run`, async () => {
    await withSim({ nodes: 1 }, async (sim) => {
      // Everything goes on top of the base's namespace and CRD (the edge agent has neither).
      const base = split(await kustomize("base")).first;
      const { first, rest } = split(await kustomize(dir));
      const setup = await kubectl(
        sim,
        ["apply", "-f", "-"],
        [base, first, APISERVERSOURCE_CRD].filter((part) => part.trim()).join("---\n"),
      );
      assertEquals(setup.code, 0, setup.stderr);
      const dry = await kubectl(sim, ["apply", "--dry-run=server", "-f", "-"], rest);
      assertEquals(dry.code, 0, dry.stderr);
      assertStringIncludes(dry.stdout, `${created} created (server dry run)`);
    });
  });
}

/** The pod spec of a Deployment, DaemonSet or CronJob. */
// deno-lint-ignore no-explicit-any -- rendered YAML
function podSpec(object: any): any {
  return object.kind === "CronJob"
    ? object.spec.jobTemplate.spec.template.spec
    : object.spec.template.spec;
}

Deno.test("manifests: the controller serves TLS from its Secret; every caller uses https with its CA; every workload is seccomp RuntimeDefault", async () => {
  const objects = [
    ...parseAllDocuments(await kustomize("overlays/relay")),
    ...parseAllDocuments(await kustomize("edge-agent")),
  ].map((doc) => doc.toJS());
  const workloads = objects.filter((o) => ["Deployment", "DaemonSet", "CronJob"].includes(o.kind));
  assertEquals(workloads.length, 4);
  for (const workload of workloads) {
    assertEquals(
      podSpec(workload).securityContext?.seccompProfile,
      { type: "RuntimeDefault" },
      `${workload.kind}/${workload.metadata.name}`,
    );
  }
  const byName = (name: string) => workloads.find((o) => o.metadata.name === name);
  const controller = podSpec(byName("edgeroll-controller")).containers[0];
  const tlsMount = controller.volumeMounts.find((m: { name: string }) => m.name === "tls");
  assertEquals(controller.args.includes(`--tls-cert=${tlsMount.mountPath}/tls.crt`), true);
  assertEquals(controller.args.includes(`--tls-key=${tlsMount.mountPath}/tls.key`), true);
  assertEquals(controller.readinessProbe.httpGet.scheme, "HTTPS");
  const relay = podSpec(byName("edgeroll-relay"));
  assertEquals(
    relay.containers[0].args.includes("--target=https://edgeroll-controller.edgeroll-system.svc"),
    true,
  );
  const tick = podSpec(byName("edgeroll-tick")).containers[0].args.join(" ");
  assertStringIncludes(tick, "--cacert /var/run/secrets/edgeroll-tls/ca.crt");
  assertStringIncludes(tick, "https://edgeroll-controller.edgeroll-system.svc/tick");
  // Callers mount the CA alone, never the controller's key.
  for (const spec of [relay, podSpec(byName("edgeroll-tick"))]) {
    const secret = spec.volumes.find((v: { secret?: unknown }) => v.secret).secret;
    assertEquals(secret, {
      secretName: "edgeroll-controller-tls",
      items: [{ key: "ca.crt", path: "ca.crt" }],
    });
  }
  // Listening on every address only where a Service points at it.
  assertEquals(controller.args.includes("--host=0.0.0.0"), true);
  const service = objects.find((o) => o.kind === "Service");
  assertEquals(service.spec.ports, [{ name: "https", port: 443, targetPort: "https" }]);
});

Deno.test("the image's ignore files keep credentials, build output and caches out, alike for docker and podman", async () => {
  const read = (name: string) => Deno.readTextFile(`${root}${name}`);
  const docker = await read(".dockerignore");
  assertEquals(await read(".containerignore"), docker);
  const patterns = docker.split("\n").filter((l) => l && !l.startsWith("#"));
  for (
    const wanted of ["*.kubeconfig", "kubeconfig", "token", "*.token", "*.key", "dist", ".cache"]
  ) {
    assertEquals(patterns.includes(wanted), true, `${wanted} is ignored`);
  }
});

Deno.test("manifests: each workload of the image may read its mounts and reach its peers only", async () => {
  const objects = [
    ...parseAllDocuments(await kustomize("overlays/relay")),
    ...parseAllDocuments(await kustomize("edge-agent")),
  ].map((doc) => doc.toJS());
  const container = (kind: string, name: string) =>
    podSpec(objects.find((o) => o.kind === kind && o.metadata.name === name)).containers[0];
  const ours = [
    container("Deployment", "edgeroll-controller"),
    container("Deployment", "edgeroll-relay"),
    container("DaemonSet", "edgeroll-edge"),
  ];
  for (const c of ours) {
    assertEquals(c.image.split(":")[0], "ghcr.io/edgeroll/edgeroll", c.name);
    // The grants come first, then the program: `deno run <entrypoint flags> <these>`.
    const grants = c.args.slice(0, c.args.indexOf("main.ts"));
    assertEquals(grants.every((g: string) => g.startsWith("--allow-")), true, c.name);
    const [read, net] = ["--allow-read=", "--allow-net"]
      .map((flag) => grants.find((g: string) => g.startsWith(flag)) ?? "");
    const readable = read.slice("--allow-read=".length).split(",");
    assertEquals(read.startsWith("--allow-read="), true, c.name);
    for (const mount of c.volumeMounts ?? []) {
      assertEquals(
        readable.some((p: string) => mount.mountPath === p || mount.mountPath.startsWith(`${p}/`)),
        true,
        `${c.name} may read ${mount.mountPath}`,
      );
    }
    assertEquals(readable.filter((p: string) => !p.startsWith("/")), [], c.name);
    assertEquals(net.startsWith("--allow-net"), true, c.name);
  }
  const apiserver = "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)";
  const [controller, relay] = ours;
  const port = controller.ports.find((p: { name: string }) => p.name === "https").containerPort;
  assertEquals(controller.args.slice(1, 4), [
    `--allow-net=${apiserver},0.0.0.0:${port}`,
    "main.ts",
    "serve",
  ]);
  const target = new URL(
    relay.args.find((a: string) => a.startsWith("--target="))!.slice("--target=".length),
  );
  assertEquals(relay.args.slice(1, 4), [
    `--allow-net=${apiserver},${target.hostname}:443`,
    "main.ts",
    "relay",
  ]);
  // The image itself grants no network and no reads; without arguments it prints its help.
  const dockerfile = await Deno.readTextFile(`${root}Dockerfile`);
  const entrypoint = JSON.parse(
    /^ENTRYPOINT (\[[\s\S]*?\])$/m.exec(dockerfile.replaceAll("\\\n", ""))![1],
  ) as string[];
  assertEquals(entrypoint.filter((f) => /^--allow-(net|read|all)|^-A$/.test(f)), []);
  // Whole, for want of a choice (ADR 0025): a dependency enumerates the environment on load.
  assertEquals(entrypoint.includes("--allow-env"), true);
  assertEquals(/^CMD \["--allow-read=\/app", "main.ts", "help"\]$/m.test(dockerfile), true);
});
