/**
 * One file of the agent's state directory, as the pod cache and the upgrade journal keep theirs:
 * JSON of one node, written whole through a temporary file (a crash leaves the old or the new),
 * and read back only for that node.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";

/** What every state file holds beside its own data. */
export interface NodeState {
  node: string;
}

/**
 * The file's content, or undefined when there is none yet. A file that cannot be read or
 * parsed, or that holds another node's `what`, stops the caller with the file's path.
 */
export function readNodeState<T extends NodeState>(
  file: string,
  node: string,
  what: string,
): T | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as { code?: string }).code === "ENOENT") return undefined;
    throw new Error(`cannot read the saved ${what} ${file}: ${(err as Error).message}`);
  }
  let saved: T;
  try {
    saved = JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`cannot read the saved ${what} ${file}: ${(err as Error).message}`);
  }
  if (saved.node !== node) {
    throw new Error(
      `${file} holds the ${what} of node ${saved.node}, not of ${node}: give this node a --state-dir of its own`,
    );
  }
  return saved;
}

/** Writes `state` as the whole of `file`, through `file.tmp`. */
export function writeNodeState<T extends NodeState>(file: string, state: T): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(state));
  renameSync(`${file}.tmp`, file);
}
