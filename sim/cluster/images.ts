/**
 * Image references as containerd reports them: `nginx:1.25` is `docker.io/library/nginx:1.25`,
 * and its digest is a stable hash of the reference, so the same image has the same imageID on
 * every node and in every run.
 */
import { createHash } from "node:crypto";

/** The fully qualified reference (registry, repository, tag or digest). */
export function normalizeImage(image: string): string {
  let ref = image;
  const firstSlash = ref.indexOf("/");
  const first = firstSlash === -1 ? "" : ref.slice(0, firstSlash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  if (!hasRegistry) ref = `docker.io/${firstSlash === -1 ? `library/${ref}` : ref}`;
  const lastSegment = ref.slice(ref.lastIndexOf("/") + 1);
  if (!lastSegment.includes(":") && !lastSegment.includes("@")) ref += ":latest";
  return ref;
}

export function imageDigest(image: string): string {
  return "sha256:" + createHash("sha256").update(normalizeImage(image)).digest("hex");
}

/** `repository@sha256:…`, the imageID of a running container. */
export function imageID(image: string): string {
  const ref = normalizeImage(image);
  const at = ref.indexOf("@");
  const repository = at !== -1 ? ref.slice(0, at) : ref.slice(0, ref.lastIndexOf(":"));
  return `${repository}@${imageDigest(image)}`;
}

/** The names a node lists for a cached image (digest form and tag form). */
export function imageNames(image: string): string[] {
  return [imageID(image), normalizeImage(image)];
}

/** A plausible size for a cached image, stable per reference (30–130 MB). */
export function imageSize(image: string): number {
  const digest = imageDigest(image);
  return 30_000_000 + (Number.parseInt(digest.slice(7, 15), 16) % 100_000_000);
}
