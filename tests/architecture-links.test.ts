/**
 * The links of `docs/architecture.md` (issue 35): every relative link on the page resolves to a
 * file, relative to `docs/`; a link written [`name` in path](target) names a function (or
 * `Class.method`) that the linked file declares; and the section `## Where each budget rule is
 * applied` gives each of its rules such a link, so a reader reaches the function applying any
 * budget rule in two hops.
 */
import { assertEquals } from "@std/assert";

const root = new URL("../", import.meta.url);
const docs = new URL("docs/", root);
const pagePath = "docs/architecture.md";
const sectionHeading = "## Where each budget rule is applied";

interface Link {
  text: string;
  target: string;
}

/** The page without its fenced code blocks, whose brackets are no links. */
async function readPage(): Promise<string> {
  const page = await Deno.readTextFile(new URL(pagePath, root));
  return page.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, "");
}

/** The text from `heading` to the next `## ` heading. */
function sectionOf(page: string, heading: string): string | undefined {
  const start = page.indexOf(`\n${heading}\n`);
  if (start < 0) return undefined;
  const body = page.slice(start + heading.length + 2);
  const next = body.search(/^## /m);
  return next < 0 ? body : body.slice(0, next);
}

/** Every inline Markdown link; its text with line breaks folded into spaces. */
function linksOf(markdown: string): Link[] {
  return [...markdown.matchAll(/(?<!!)\[([^\]]+)\]\(([^)\s]+)\)/g)].map((m) => ({
    text: m[1].replace(/\s+/g, " ").trim(),
    target: m[2],
  }));
}

const isRelative = (target: string) =>
  !/^[a-z][a-z0-9+.-]*:/i.test(target) && !/^[#/]/.test(target);

/** A link naming a function: [`name` in path](target). */
function namedFunction(link: Link): { name: string; path: string } | undefined {
  const m = link.text.match(/^`([^`]+)` in (\S+)$/);
  return m ? { name: m[1], path: m[2] } : undefined;
}

async function isFile(url: URL): Promise<boolean> {
  try {
    return (await Deno.stat(url)).isFile;
  } catch {
    return false;
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Whether `source` declares `name`: `function name`, `const name =` (or let/var), `class name`,
 * `export … name`; for `Class.method`, a method `method(` in the body of `class Class` (from its
 * declaration to the closing brace at the start of a line, as `deno fmt` leaves it).
 */
function declares(source: string, name: string): boolean {
  const dot = name.indexOf(".");
  if (dot > 0) {
    const [owner, method] = [name.slice(0, dot), name.slice(dot + 1)];
    const at = source.search(new RegExp(`\\bclass\\s+${escape(owner)}\\b`));
    if (at < 0) return false;
    const end = source.indexOf("\n}", at);
    const body = source.slice(at, end < 0 ? undefined : end);
    const modifiers = "(?:(?:public|private|protected|static|async|override|get|set)\\s+)*";
    return new RegExp(`^\\s*${modifiers}${escape(method)}\\s*(?:<[^>\\n]*>)?\\(`, "m").test(body);
  }
  const n = escape(name);
  return [
    new RegExp(`\\bfunction\\s*\\*?\\s*${n}\\s*[<(]`),
    new RegExp(`\\b(?:const|let|var)\\s+${n}\\s*[=:]`),
    new RegExp(`\\bclass\\s+${n}\\b`),
    new RegExp(`^\\s*export\\b[^\\n;]*\\b${n}\\b`, "m"),
  ].some((pattern) => pattern.test(source));
}

/** Why `link` does not resolve, or undefined when it does. */
async function brokenReason(link: Link): Promise<string | undefined> {
  const file = new URL(link.target.replace(/#.*$/, ""), docs);
  if (!file.href.startsWith(root.href)) return "points outside the repository";
  if (!(await isFile(file))) return "no such file";
  const named = namedFunction(link);
  if (!named) return undefined;
  if (new URL(named.path, root).href !== file.href) {
    return `the text says ${named.path}, the target is another file`;
  }
  if (!declares(await Deno.readTextFile(file), named.name)) {
    return `${named.path} declares no ${named.name}`;
  }
  return undefined;
}

async function brokenLinks(links: Link[]): Promise<string[]> {
  const broken: string[] = [];
  for (const link of links) {
    const why = await brokenReason(link);
    if (why) broken.push(`[${link.text}](${link.target}): ${why}`);
  }
  return broken;
}

Deno.test("docs/architecture.md: every relative link resolves to a file", async () => {
  const links = linksOf(await readPage()).filter((l) => isRelative(l.target));
  assertEquals(await brokenLinks(links), []);
});

Deno.test("docs/architecture.md: each budget rule links to its function", async () => {
  const section = sectionOf(await readPage(), sectionHeading);
  assertEquals(section !== undefined, true, `${pagePath} has no "${sectionHeading}"`);
  const bullets = section!.split(/^- /m).slice(1);
  const ruleLinks = (text: string) => linksOf(text).filter((l) => namedFunction(l) !== undefined);
  // Every bullet is a rule with its function; an empty or link-less section cannot pass.
  assertEquals(
    bullets.filter((b) => ruleLinks(b).length === 0).map((b) => b.split("\n")[0]),
    [],
  );
  const links = ruleLinks(section!);
  assertEquals(links.length >= 8, true, `only ${links.length} rule links in the section`);
  assertEquals(await brokenLinks(links), []);
});
