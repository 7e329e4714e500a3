/** Runs the real `kubectl` (a dispatcher on the build machines that matches the server). */

export class KubectlError extends Error {
  override name = "KubectlError";
  constructor(readonly args: string[], readonly code: number, readonly stderr: string) {
    super(`kubectl ${args.join(" ")} exited ${code}: ${stderr.trim()}`);
  }
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `command args…` with `stdin` piped in when given, whatever its exit code. */
export async function runPiped(
  command: string,
  args: string[],
  stdin?: string,
): Promise<KubectlResult> {
  const child = new Deno.Command(command, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(stdin));
    await writer.close();
  }
  const { code, stdout, stderr } = await child.output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

/** `kubectl --kubeconfig K args…` with `stdin` piped in when given, whatever its exit code. */
export function runKubectl(
  kubeconfigPath: string,
  args: string[],
  stdin?: string,
): Promise<KubectlResult> {
  return runPiped(
    Deno.env.get("KUBECTL") ?? "kubectl",
    ["--kubeconfig", kubeconfigPath, ...args],
    stdin,
  );
}

/** `kubectl --kubeconfig K args…`, returning stdout; throws KubectlError on a non-zero exit. */
export async function kubectl(
  kubeconfigPath: string,
  args: string[],
  stdin?: string,
): Promise<string> {
  const { code, stdout, stderr } = await runKubectl(kubeconfigPath, args, stdin);
  if (code !== 0) throw new KubectlError(args, code, stderr);
  return stdout;
}

/** `kubectl … -o json`, parsed. */
export async function kubectlJson<T = Record<string, unknown>>(
  kubeconfigPath: string,
  args: string[],
): Promise<T> {
  return JSON.parse(await kubectl(kubeconfigPath, [...args, "-o", "json"])) as T;
}

/**
 * The whole object, in place of whatever has its name (an edgeroll CRD for Kruise's DaemonSet
 * included): replace, not apply, so that no field of another owner survives, and no
 * last-applied annotation overflows on a large CRD.
 */
export async function replaceOrCreate(
  kubeconfig: string,
  object: { kind?: unknown; metadata?: unknown },
): Promise<void> {
  const body = JSON.stringify(object);
  const replaced = await runKubectl(kubeconfig, ["replace", "-f", "-"], body);
  if (replaced.code === 0) return;
  if (!/NotFound|not found/.test(replaced.stderr)) {
    const name = (object.metadata as { name?: string } | undefined)?.name;
    throw new Error(`kubectl replace ${object.kind}/${name}: ${replaced.stderr.trim()}`);
  }
  await kubectl(kubeconfig, ["create", "-f", "-"], body);
}
