/** Files generated from the code (`deno task crd`, `deno task openapi`), written under one directory. */
export async function writeGenerated(
  out: string,
  files: [name: string, text: string][],
  what: string,
): Promise<void> {
  for (const [name, text] of files) {
    const path = `${out.replace(/\/$/, "")}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(path, text);
    console.log(JSON.stringify({ msg: `wrote ${what}`, path }));
  }
}
