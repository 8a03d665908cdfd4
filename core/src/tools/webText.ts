/**
 * Fetched content to text for the web tools (./web.ts): HTML to readable text (no scripts or
 * styles, block elements on their own lines, entities decoded), content-type sniffing, charset
 * decoding and a UTF-8 cap that never splits a character. Tested in core/test/tools.web.test.ts.
 */

const ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  copy: '©',
  reg: '®',
  trade: '™',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  bull: '•',
  middot: '·',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  deg: '°',
  times: '×',
  divide: '÷',
  para: '¶',
  sect: '§',
};

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (m, e: string) => {
    if (e[0] === '#') {
      const code =
        e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

/** HTML to readable text: no scripts/styles, block elements on their own lines, entities decoded. */
export function htmlToText(html: string): { title: string | null; text: string } {
  const titleMatch = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html);
  const title = titleMatch
    ? decodeEntities(titleMatch[1].replace(/<[^>]*>/g, ''))
        .replace(/\s+/g, ' ')
        .trim() || null
    : null;
  let s = html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(
      /<(script|style|noscript|template|svg|math|iframe|object|head|select)\b[^>]*>[\s\S]*?<\/\1\s*>/gi,
      ' ',
    )
    .replace(/<(br|hr)\b[^>]*\/?>/gi, '\n')
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<(td|th)\b[^>]*>/gi, ' \t')
    .replace(
      /<\/?(p|div|h[1-6]|ul|ol|li|tr|table|section|article|header|footer|nav|aside|main|blockquote|pre|figure|figcaption|dl|dt|dd|form|fieldset|address|details|summary)\b[^>]*>/gi,
      '\n',
    )
    .replace(/<[^>]*>/g, '');
  s = decodeEntities(s)
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text: s };
}

export type Kind = 'html' | 'text' | 'binary';

export function contentKind(contentType: string, body: Buffer): Kind {
  const ct = contentType.split(';')[0].trim().toLowerCase();
  if (ct === 'text/html' || ct === 'application/xhtml+xml') return 'html';
  if (
    ct.startsWith('text/') ||
    ct.endsWith('+json') ||
    ct.endsWith('+xml') ||
    [
      'application/json',
      'application/xml',
      'application/javascript',
      'application/x-javascript',
      'application/ecmascript',
      'application/yaml',
      'application/x-yaml',
      'application/toml',
      'application/x-ndjson',
      'application/x-www-form-urlencoded',
    ].includes(ct)
  ) {
    return 'text';
  }
  if (ct && ct !== 'application/octet-stream') return 'binary';
  // No (useful) type: sniff.
  const headBytes = body.subarray(0, 1024);
  if (headBytes.includes(0)) return 'binary';
  const head = headBytes.toString('latin1').trimStart().toLowerCase();
  if (head.startsWith('<!doctype html') || head.startsWith('<html')) return 'html';
  return 'text';
}

export function decodeText(body: Buffer, contentType: string, kind: Kind): string {
  let charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (!charset && kind === 'html')
    charset = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(
      body.subarray(0, 4096).toString('latin1'),
    )?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/** Cuts `s` to at most `maxBytes` of UTF-8 without splitting a character. */
export function capUtf8(s: string, maxBytes: number): { text: string; cut: boolean } {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return { text: s, cut: false };
  let end = maxBytes;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), cut: true };
}
