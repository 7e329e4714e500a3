/** One permission a Kubernetes call needs: RBAC's (API group, resource, verb). */
export interface Access {
  group: string;
  resource: string;
  verb: string;
}
