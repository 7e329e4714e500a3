/** A `LabelSelector` object written as the `labelSelector` query string the API takes. */

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export function labelSelectorString(selector: LabelSelector | undefined): string {
  const terms = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    switch (operator) {
      case "In":
        terms.push(`${key} in (${values.join(",")})`);
        break;
      case "NotIn":
        terms.push(`${key} notin (${values.join(",")})`);
        break;
      case "Exists":
        terms.push(key);
        break;
      case "DoesNotExist":
        terms.push(`!${key}`);
        break;
      default:
        throw new Error(`label selector: unknown operator "${operator}" for key "${key}"`);
    }
  }
  return terms.join(",");
}
