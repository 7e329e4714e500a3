/**
 * Upgrades asked for while the node was cut off from the cloud (`?whenConnected=true`), kept in
 * `upgrades.json` under the state directory until the link returns and the agent carries each
 * out, and a short history of how each ended. Every change is written before it is answered or
 * acted on, so a request survives an agent restart, and one already carried out is not carried
 * out again: the delete names the pod's UID, and a pod found gone or replaced counts as done.
 */
import { OtaError } from "../controller/ota-checks.ts";
import { type NodeState, readNodeState, writeNodeState } from "./state-file.ts";

export type UpgradeState =
  /** Waiting for the link. */
  | "pending"
  /** The agent deleted the pod with its UID: its DaemonSet recreates it at the new revision. */
  | "started"
  /** The pod of that UID was gone or being deleted when the link returned: nothing to do. */
  | "replaced"
  /** The pre-checks failed when the link returned (`detail` has YurtHub's sentence). */
  | "refused";

export interface UpgradeRequest {
  namespace: string;
  name: string;
  /** The pod the request was for; a pod recreated under the same name is another. */
  uid: string;
  /** `PodNeedUpgrade`'s message when asked (`controllerrevision: <hash>`). */
  revision: string;
  requestedAt: string;
  state: UpgradeState;
  settledAt?: string;
  detail?: string;
}

/** Bounds on what callers can make the journal hold (a node has far fewer pods). */
export const maxPendingUpgrades = 256;
const maxSettledKept = 32;

export class UpgradeJournal {
  readonly #file: string;
  readonly #node: string;
  #requests: UpgradeRequest[] = [];

  constructor(stateDir: string, node: string) {
    this.#file = `${stateDir}/upgrades.json`;
    this.#node = node;
  }

  /** Reads the saved journal, if any; one that cannot be read stops the start with its path. */
  load(): void {
    const saved = readNodeState<NodeState & { requests: UpgradeRequest[] }>(
      this.#file,
      this.#node,
      "upgrade journal",
    );
    if (saved) this.#requests = saved.requests;
  }

  /** Pending requests first, then the latest settled, as `GET /pods` shows them. */
  list(): readonly UpgradeRequest[] {
    return this.#requests;
  }

  pending(): UpgradeRequest[] {
    return this.#requests.filter((r) => r.state === "pending");
  }

  /**
   * Records a request (a second one for the same pod replaces the first) and writes it down
   * before returning: the caller's 202 promises it.
   */
  add(request: Omit<UpgradeRequest, "state">): void {
    const others = this.#requests.filter((r) =>
      !(r.state === "pending" && r.namespace === request.namespace && r.name === request.name)
    );
    if (others.filter((r) => r.state === "pending").length >= maxPendingUpgrades) {
      throw new OtaError(
        503,
        `OTA upgrade is not allowed when node is disconnected to cloud, and ${maxPendingUpgrades} upgrades already wait for the link`,
      );
    }
    this.#save([{ ...request, state: "pending" }, ...others]);
  }

  /** Ends a pending request, written before the caller goes on. */
  settle(
    request: UpgradeRequest,
    state: Exclude<UpgradeState, "pending">,
    at: string,
    detail?: string,
  ) {
    const settled: UpgradeRequest = {
      ...request,
      state,
      settledAt: at,
      ...(detail ? { detail } : {}),
    };
    const rest = this.#requests.filter((r) => r !== request);
    const pending = rest.filter((r) => r.state === "pending");
    const history = [settled, ...rest.filter((r) => r.state !== "pending")].slice(
      0,
      maxSettledKept,
    );
    this.#save([...pending, ...history]);
  }

  #save(requests: UpgradeRequest[]): void {
    writeNodeState(this.#file, { node: this.#node, requests });
    this.#requests = requests;
  }
}
