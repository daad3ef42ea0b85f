/**
 * A small XML reader for the fake's own answers (elements, attributes, text; no DTDs, no
 * CDATA, no mixed content): enough to check them against the botocore models independently
 * of the code that wrote them.
 */

export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly children: readonly XmlElement[];
  /** The unescaped text of a leaf element ("" for one with children). */
  readonly text: string;
}

const ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeXml(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-z]+);/g, (whole, e: string) => {
    if (e.startsWith("#x")) return String.fromCodePoint(Number.parseInt(e.slice(2), 16));
    if (e.startsWith("#")) return String.fromCodePoint(Number(e.slice(1)));
    const v = ENTITIES[e];
    if (v === undefined) throw new Error(`unknown entity ${whole}`);
    return v;
  });
}

export function parseXml(text: string): XmlElement {
  let pos = 0;
  const src = text.replace(/^\uFEFF/, "");
  const skipSpace = () => {
    while (pos < src.length && /\s/.test(src[pos]!)) pos++;
  };
  if (src.startsWith("<?xml", pos)) {
    const end = src.indexOf("?>", pos);
    if (end < 0) throw new Error("unterminated XML declaration");
    pos = end + 2;
  }
  skipSpace();

  const element = (): XmlElement => {
    const open = /^<([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"]*")*)\s*(\/?)>/.exec(src.slice(pos));
    if (open === null) throw new Error(`element expected at ${pos}`);
    pos += open[0].length;
    const name = open[1]!;
    const attributes: Record<string, string> = {};
    for (const m of (open[2] ?? "").matchAll(/([\w:.-]+)="([^"]*)"/g)) attributes[m[1]!] = unescapeXml(m[2]!);
    if (open[3] === "/") return { name, attributes, children: [], text: "" };
    const children: XmlElement[] = [];
    let raw = "";
    for (;;) {
      if (pos >= src.length) throw new Error(`<${name}> is not closed`);
      if (src.startsWith("</", pos)) {
        const close = /^<\/([A-Za-z_][\w.-]*)\s*>/.exec(src.slice(pos));
        if (close === null || close[1] !== name) throw new Error(`</${name}> expected at ${pos}`);
        pos += close[0].length;
        break;
      }
      if (src[pos] === "<") {
        children.push(element());
        continue;
      }
      const next = src.indexOf("<", pos);
      raw += src.slice(pos, next < 0 ? src.length : next);
      pos = next < 0 ? src.length : next;
    }
    if (children.length > 0 && raw.trim() !== "") throw new Error(`<${name}> mixes text and elements`);
    return { name, attributes, children, text: children.length > 0 ? "" : unescapeXml(raw) };
  };

  const root = element();
  skipSpace();
  if (pos !== src.length) throw new Error("content after the root element");
  return root;
}
