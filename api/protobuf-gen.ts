/**
 * Writes api/protobuf-schema.ts: the protobuf fields of the messages a Pod, a Node, their lists
 * and a Status reach, read from the Go types of k8s.io/api and k8s.io/apimachinery (their struct
 * tags name each field's number, its JSON name, omitempty, and the Go type says whether it is a
 * pointer). The modules come from the Go module proxy at the version cluster/ builds.
 *
 *   deno task gen:protobuf
 */
const version = "v0.33.13";
const out = new URL("./protobuf-schema.ts", import.meta.url).pathname;

/** Go's import paths of the packages read, by the short name this schema gives them. */
const packages = {
  core: ["k8s.io/api", "core/v1"],
  meta: ["k8s.io/apimachinery", "pkg/apis/meta/v1"],
  types: ["k8s.io/apimachinery", "pkg/types"],
  runtime: ["k8s.io/apimachinery", "pkg/runtime"],
  intstr: ["k8s.io/apimachinery", "pkg/util/intstr"],
  resource: ["k8s.io/apimachinery", "pkg/api/resource"],
} as const;
type Package = keyof typeof packages;

/** The Go import names these files use for each package. */
const importNames: Record<string, Package> = {
  v1: "core",
  corev1: "core",
  metav1: "meta",
  types: "types",
  runtime: "runtime",
  intstr: "intstr",
  resource: "resource",
};

/** Types with a protobuf form of their own, decoded by hand (kube/protobuf.ts). */
const special: Record<string, string> = {
  "meta.Time": "Time",
  "meta.MicroTime": "MicroTime",
  "meta.Duration": "Duration",
  "meta.FieldsV1": "FieldsV1",
  "resource.Quantity": "Quantity",
  "intstr.IntOrString": "IntOrString",
  "runtime.RawExtension": "RawExtension",
};

/**
 * What the controller reads as protobuf (pods, nodes, their lists, errors) and what sim decodes
 * of kubectl's protobuf request bodies.
 */
const roots = [
  "core.Pod",
  "core.PodList",
  "core.Node",
  "core.NodeList",
  "meta.Status",
  // What a client built on controller-runtime sends with a DELETE of a built-in kind.
  "meta.DeleteOptions",
  "core.Namespace",
  "core.ConfigMap",
  "core.Secret",
  "core.ServiceAccount",
];

interface GoField {
  goType: string;
  json: string;
  omitEmpty: boolean;
  inline: boolean;
  number: number;
}

async function moduleDir(module: string): Promise<string> {
  const output = await new Deno.Command("go", {
    args: ["mod", "download", "-json", `${module}@${version}`],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error(`go mod download ${module}@${version} failed`);
  const { Dir } = JSON.parse(new TextDecoder().decode(output.stdout)) as { Dir?: string };
  if (!Dir) throw new Error(`go mod download ${module}@${version} named no directory`);
  return Dir;
}

/** Each package's structs (their tagged fields) and its other named types (their Go type). */
async function readPackage(dir: string) {
  const structs = new Map<string, GoField[]>();
  const named = new Map<string, string>();
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".go") || entry.name.endsWith("_test.go")) continue;
    const source = await Deno.readTextFile(`${dir}/${entry.name}`);
    for (const match of source.matchAll(/^type (\w+) struct \{\n([\s\S]*?)^\}/gm)) {
      structs.set(match[1], fieldsOf(match[2]));
    }
    for (const match of source.matchAll(/^type (\w+) ([\w.*\[\]]+)\s*$/gm)) {
      named.set(match[1], match[2]);
    }
  }
  return { structs, named };
}

function fieldsOf(body: string): GoField[] {
  const fields: GoField[] = [];
  for (const line of body.split("\n")) {
    const match = /^\s*(?:(\w+)\s+)?([\w.*\[\]]+)\s+`([^`]*)`/.exec(line);
    if (!match) continue;
    const tags = match[3];
    const protobuf = /protobuf:"([^"]*)"/.exec(tags)?.[1];
    if (!protobuf || protobuf === "-") continue;
    const json = /json:"([^"]*)"/.exec(tags)?.[1] ?? "";
    const [jsonName, ...options] = json.split(",");
    const number = Number(protobuf.split(",")[1]);
    const protobufName = /name=(\w+)/.exec(protobuf)?.[1] ?? "";
    fields.push({
      goType: match[2],
      json: jsonName || protobufName,
      omitEmpty: options.includes("omitempty"),
      inline: options.includes("inline"),
      number,
    });
  }
  return fields;
}

const read = new Map<Package, Awaited<ReturnType<typeof readPackage>>>();
for (const [name, [module, path]] of Object.entries(packages) as [Package, readonly string[]][]) {
  read.set(name, await readPackage(`${await moduleDir(module)}/${path}`));
}

/**
 * A field's kind as the schema writes it: a scalar (`string`, `bool`, `int32`, `int64`,
 * `double`, `bytes`), a special type, or a message (`core.Container`); with whether it is a
 * list, a map (of that kind, keyed by strings) or a pointer.
 */
function kindOf(
  goType: string,
  pkg: Package,
): { kind: string; repeated: boolean; map: boolean; pointer: boolean } {
  let type = goType;
  const pointer = type.startsWith("*");
  if (pointer) type = type.slice(1);
  if (type === "[]byte") return { kind: "bytes", repeated: false, map: false, pointer };
  if (type.startsWith("[]")) {
    return { ...kindOf(type.slice(2), pkg), repeated: true, map: false, pointer };
  }
  const map = /^map\[[\w.]+\](.+)$/.exec(type);
  if (map) return { ...kindOf(map[1], pkg), repeated: false, map: true, pointer };
  const scalars: Record<string, string> = {
    string: "string",
    bool: "bool",
    int32: "int32",
    int64: "int64",
    int: "int64",
    float64: "double",
  };
  if (scalars[type]) return { kind: scalars[type], repeated: false, map: false, pointer };
  const [qualifier, local] = type.includes(".") ? type.split(".") : [undefined, type];
  const owner = qualifier ? importNames[qualifier] : pkg;
  if (!owner) throw new Error(`${goType}: package ${qualifier} is not read`);
  const key = `${owner}.${local}`;
  if (special[key]) return { kind: special[key], repeated: false, map: false, pointer };
  const { structs, named } = read.get(owner)!;
  if (structs.has(local)) return { kind: key, repeated: false, map: false, pointer };
  const underlying = named.get(local);
  if (!underlying) throw new Error(`${goType} (${key}): no struct or named type`);
  const resolved = kindOf(underlying, owner);
  return { ...resolved, pointer: pointer || resolved.pointer };
}

/** `core.Container` → its fields, as one line each: `number json kind flags`. */
const schema = new Map<string, string[]>();
const pending = [...roots];
while (pending.length > 0) {
  const key = pending.pop()!;
  if (schema.has(key)) continue;
  const [pkg, name] = key.split(".") as [Package, string];
  const fields = read.get(pkg)!.structs.get(name);
  if (!fields) throw new Error(`${key}: no such struct`);
  const lines: string[] = [];
  for (const field of fields) {
    const { kind, repeated, map, pointer } = kindOf(field.goType, pkg);
    if (kind.includes(".")) pending.push(kind);
    const flags = [
      repeated ? "r" : "",
      map ? "m" : "",
      field.omitEmpty ? "o" : "",
      pointer ? "p" : "",
      field.inline ? "i" : "",
    ].join("");
    lines.push(`${field.number} ${field.json} ${kind}${flags ? ` ${flags}` : ""}`);
  }
  schema.set(key, lines);
}

const body = [...schema.keys()].sort().map((key) =>
  `  ${JSON.stringify(key)}: ${JSON.stringify(schema.get(key)!.join("|"))},`
);
await Deno.writeTextFile(
  out,
  [
    `// Generated by kube/protobuf-gen.ts from k8s.io/api and k8s.io/apimachinery ${version}:`,
    "// `deno task gen:protobuf` writes it again. Each message's fields, `|`-separated, each",
    "// `number jsonName kind [flags]`; flags: r repeated, m map (string keys), o omitempty,",
    "// p pointer, i inline (its fields are its parent's in JSON).",
    `export const protobufVersion = ${JSON.stringify(version)};`,
    "",
    "export const protobufMessages: Record<string, string> = {",
    ...body,
    "};",
    "",
  ].join("\n"),
);
console.log(`wrote ${out}: ${schema.size} messages`);
