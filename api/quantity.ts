/**
 * Kubernetes resource quantities (`resource.Quantity`'s string form: "250m", "1.5", "128Mi",
 * "1e3", "2G") read as numbers, so two spellings of one value compare equal as the API server's
 * own comparisons do. Values beyond 2^53 milli-units lose precision; no pod asks for that much.
 */
const suffixes: Record<string, number> = {
  "": 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const form = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/;

/** The quantity in milli-units (cores to millicores, bytes to millibytes), or undefined. */
export function quantityMillis(quantity: string | number): number | undefined {
  const match = form.exec(String(quantity).trim());
  if (!match) return undefined;
  const [, number, exponent, suffix = ""] = match;
  const scale = exponent ? 10 ** Number(exponent.slice(1)) : suffixes[suffix];
  return Math.round(Number(number) * scale * 1000);
}

/** A resource list (`requests` or `limits`): name to quantity. */
export type ResourceList = Record<string, string | number>;
