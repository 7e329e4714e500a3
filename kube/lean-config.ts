/**
 * Where the edge agent's few Kubernetes calls go and with which credentials: a kubeconfig file
 * (kubectl's precedence: the path given, then in-cluster, then `$KUBECONFIG`, then
 * `~/.kube/config`), read without @kubernetes/client-node, whose generated models cost the
 * agent most of its memory (ADR 0019). Runtime-neutral: `node:` built-ins and `yaml` only.
 *
 * What a kubelet's or an operator's kubeconfig holds is understood: server, CA (file or data),
 * `insecure-skip-tls-verify`, `tls-server-name`, client certificate and key (files or data),
 * bearer token (inline or `tokenFile`). What this small reader does not do (exec plugins,
 * auth providers, proxies, basic auth) is refused by name rather than ignored.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import process from "node:process";
import { parse as parseYaml } from "yaml";

/** What a connection to the API server is made with; files are re-read by `material()`. */
export interface LeanConnection {
  /** `https://host:port` (or `http://` for a loopback test server), no trailing slash. */
  server: string;
  /** Where it came from, for errors: a kubeconfig path or `in-cluster`. */
  source: string;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
  ca?: Secret;
  cert?: Secret;
  key?: Secret;
  token?: Secret;
}

/** A value given inline or as a file, read when a connection is (re)made (rotation). */
export type Secret = { data: string } | { file: string };

export function readSecret(secret: Secret): string {
  return "data" in secret ? secret.data : readFileSync(secret.file, "utf8");
}

/** `--kubeconfig`'s help line, the same for every command. */
export const kubeconfigHelp =
  "kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)";

const inClusterDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Fields of a kubeconfig's `user` this reader cannot honour: refused, never skipped. */
const unsupportedUserFields = ["exec", "auth-provider", "username", "password", "as"];

type Entry = Record<string, unknown>;

function named(list: unknown, name: unknown, what: string, source: string): Entry {
  const found = Array.isArray(list)
    ? list.find((item) => (item as Entry)?.name === name) as Entry | undefined
    : undefined;
  const body = found?.[what];
  if (typeof body !== "object" || body === null) {
    throw new Error(`${source}: no ${what} named "${String(name)}"`);
  }
  return body as Entry;
}

/** `x-data` (base64) wins over `x` (a file, relative to the kubeconfig), as kubectl reads. */
function secretOf(entry: Entry, field: string, baseDir: string): Secret | undefined {
  const data = entry[`${field}-data`];
  if (typeof data === "string" && data !== "") {
    return { data: atob(data) };
  }
  const file = entry[field];
  if (typeof file === "string" && file !== "") {
    return { file: isAbsolute(file) ? file : join(baseDir, file) };
  }
  return undefined;
}

/** The current context of the kubeconfig at `path`. */
export function connectionFromKubeconfig(path: string): LeanConnection {
  const config = parseYaml(readFileSync(path, "utf8")) as Entry | null;
  if (typeof config !== "object" || config === null) throw new Error(`${path}: not a kubeconfig`);
  const current = config["current-context"];
  if (typeof current !== "string" || current === "") {
    throw new Error(`${path}: no current-context`);
  }
  const context = named(config.contexts, current, "context", path);
  const cluster = named(config.clusters, context.cluster, "cluster", path);
  const user = context.user === undefined ? {} : named(config.users, context.user, "user", path);
  const unsupported = unsupportedUserFields.filter((field) => user[field] !== undefined);
  if (unsupported.length > 0) {
    throw new Error(
      `${path}: user "${String(context.user)}" uses ${
        unsupported.join(", ")
      }, which the edge agent does not support: give it a kubeconfig with a client certificate or a token`,
    );
  }
  if (cluster["proxy-url"] !== undefined) {
    throw new Error(`${path}: proxy-url is not supported by the edge agent`);
  }
  const server = cluster.server;
  if (typeof server !== "string" || !/^https?:\/\//.test(server)) {
    throw new Error(`${path}: cluster "${String(context.cluster)}" has no http(s) server`);
  }
  const baseDir = dirname(path);
  const tokenFile = user.tokenFile;
  return {
    server: server.replace(/\/+$/, ""),
    source: path,
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] === true,
    tlsServerName: typeof cluster["tls-server-name"] === "string"
      ? cluster["tls-server-name"]
      : undefined,
    ca: secretOf(cluster, "certificate-authority", baseDir),
    cert: secretOf(user, "client-certificate", baseDir),
    key: secretOf(user, "client-key", baseDir),
    token: typeof user.token === "string" && user.token !== ""
      ? { data: user.token }
      : typeof tokenFile === "string" && tokenFile !== ""
      ? { file: isAbsolute(tokenFile) ? tokenFile : join(baseDir, tokenFile) }
      : undefined,
  };
}

/** The pod's ServiceAccount, as client-go's `InClusterConfig`. */
function inClusterConnection(): LeanConnection {
  const host = process.env.KUBERNETES_SERVICE_HOST ?? "";
  const port = process.env.KUBERNETES_SERVICE_PORT ?? "443";
  return {
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    source: "in-cluster",
    insecureSkipTlsVerify: false,
    ca: { file: `${inClusterDir}/ca.crt` },
    // Projected tokens rotate: the file is read again for every new connection.
    token: { file: `${inClusterDir}/token` },
  };
}

/** kubectl's precedence: `path`, then in-cluster, then `$KUBECONFIG` (first), `~/.kube/config`. */
export function loadLeanConnection(path?: string): LeanConnection {
  if (path) return connectionFromKubeconfig(path);
  if (process.env.KUBERNETES_SERVICE_HOST) return inClusterConnection();
  const fromEnv = process.env.KUBECONFIG?.split(":").find((p) => p !== "");
  return connectionFromKubeconfig(fromEnv ?? join(homedir(), ".kube", "config"));
}
