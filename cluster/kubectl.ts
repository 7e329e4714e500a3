/** Runs the real `kubectl` (a dispatcher on the build machines that matches the server). */

export class KubectlError extends Error {
  override name = "KubectlError";
  constructor(readonly args: string[], readonly code: number, readonly stderr: string) {
    super(`kubectl ${args.join(" ")} exited ${code}: ${stderr.trim()}`);
  }
}

/** `kubectl --kubeconfig K args…`, returning stdout; throws KubectlError on a non-zero exit. */
export async function kubectl(
  kubeconfigPath: string,
  args: string[],
  stdin?: string,
): Promise<string> {
  const child = new Deno.Command(Deno.env.get("KUBECTL") ?? "kubectl", {
    args: ["--kubeconfig", kubeconfigPath, ...args],
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
  if (code !== 0) throw new KubectlError(args, code, decoder.decode(stderr));
  return decoder.decode(stdout);
}

/** `kubectl … -o json`, parsed. */
export async function kubectlJson<T = Record<string, unknown>>(
  kubeconfigPath: string,
  args: string[],
): Promise<T> {
  return JSON.parse(await kubectl(kubeconfigPath, [...args, "-o", "json"])) as T;
}
