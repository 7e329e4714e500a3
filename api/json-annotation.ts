/**
 * A spec carried in an annotation as JSON, where a kind's schema has no field for it (a rollout
 * plan or maintenance windows on Kruise's and OpenYurt's DaemonSets, ADRs 0053 and 0054): read
 * and parsed, each problem under the annotation's path.
 */
import type { z } from "zod";
import { type FieldIssue, zodIssues } from "./label-selector.ts";

/** The path an annotation's problems are named under. */
export const annotationPath = (name: string) => `metadata.annotations[${name}]`;

/**
 * The value of annotation `name` parsed by `schema`, or its problems; neither when absent.
 * `what` names the spec in messages ("a rollout plan"); more than `maxBytes` is refused unread.
 */
export function readJsonAnnotation<T extends z.ZodType>(
  annotations: Record<string, string> | undefined,
  name: string,
  schema: T,
  what: string,
  maxBytes: number,
): { value?: z.infer<T>; issues: FieldIssue[] } {
  const value = annotations?.[name];
  if (value === undefined) return { issues: [] };
  const path = annotationPath(name);
  const issue = (message: string) => ({ issues: [{ path, message }] });
  if (value.length > maxBytes) {
    return issue(`is ${value.length} bytes, more than the ${maxBytes} ${what} may be`);
  }
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (err) {
    return issue(`must be ${what} as JSON: ${err instanceof Error ? err.message : err}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) return { issues: zodIssues(parsed.error, path) };
  return { value: parsed.data, issues: [] };
}
