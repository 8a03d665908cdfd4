/**
 * A minimal browser for sign-in flows without chromium: follows redirects by hand across the
 * platform (http) and a fixture identity provider (https, its certificate trusted), keeps
 * cookies per host (Max-Age=0 deletes; paths ignored), submits the provider's HTML forms.
 * The chromium tests drive the same flows in a real browser (console-oidc-browser.test.ts).
 */
import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';

export interface Hop {
  status: number;
  url: string;
  location: string | null;
  setCookies: string[];
}

export interface Page {
  status: number;
  url: string;
  text: string;
  hops: Hop[];
}

export class SignInBrowser {
  readonly jar = new Map<string, Map<string, string>>();
  private readonly agent: Agent;

  constructor(caFile?: string) {
    this.agent = new Agent({ connect: caFile ? { ca: readFileSync(caFile) } : {} });
  }

  cookie(url: string, name: string): string | undefined {
    return this.jar.get(new URL(url).host)?.get(name);
  }

  setCookie(url: string, name: string, value: string): void {
    const host = new URL(url).host;
    if (!this.jar.has(host)) this.jar.set(host, new Map());
    this.jar.get(host)!.set(name, value);
  }

  /** Loads `url`, following redirects until an answer that is not one, or `stopAt` matches. */
  async go(
    url: string,
    init: { method?: string; form?: Record<string, string>; stopAt?: (u: URL) => boolean } = {},
  ): Promise<Page> {
    const hops: Hop[] = [];
    let method = init.method ?? (init.form ? 'POST' : 'GET');
    let body: string | undefined = init.form
      ? new URLSearchParams(init.form).toString()
      : undefined;
    let current = url;
    for (let i = 0; i < 25; i++) {
      if (init.stopAt?.(new URL(current))) return { status: 0, url: current, text: '', hops };
      const host = new URL(current).host;
      const cookies = [...(this.jar.get(host) ?? new Map()).entries()]
        .map(([k, v]) => `${k}=${v}`)
        .join('; ');
      const res = await undiciFetch(current, {
        method,
        redirect: 'manual',
        dispatcher: this.agent,
        headers: {
          ...(cookies ? { cookie: cookies } : {}),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          accept: 'text/html,application/json',
        },
        body,
      });
      const setCookies = res.headers.getSetCookie();
      for (const c of setCookies) this.store(host, c);
      const location = res.headers.get('location');
      hops.push({ status: res.status, url: current, location, setCookies });
      if (res.status >= 300 && res.status < 400 && location) {
        await res.arrayBuffer();
        current = new URL(location, current).href;
        method = 'GET';
        body = undefined;
        continue;
      }
      return { status: res.status, url: current, text: await res.text(), hops };
    }
    throw new Error(`more than 25 redirects from ${url}`);
  }

  /** Submits the page's first form (action resolved against the page), with `fields` added. */
  submit(page: Page, fields: Record<string, string>, init: { stopAt?: (u: URL) => boolean } = {}) {
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(page.text);
    if (!form) throw new Error(`no form on ${page.url}: ${page.text.slice(0, 300)}`);
    const hidden: Record<string, string> = {};
    for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
      hidden[m[1]!] = m[2]!;
    const action = new URL(form[1]!.replace(/&amp;/g, '&'), page.url).href;
    return this.go(action, { form: { ...hidden, ...fields }, stopAt: init.stopAt });
  }

  private store(host: string, header: string): void {
    const [pair, ...attrs] = header.split(';');
    const i = pair!.indexOf('=');
    const name = pair!.slice(0, i).trim();
    const value = pair!.slice(i + 1).trim();
    if (!this.jar.has(host)) this.jar.set(host, new Map());
    const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '';
    if (expired) this.jar.get(host)!.delete(name);
    else this.jar.get(host)!.set(name, value);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/**
 * Signs in through the fixture OpenID provider's dev interactions as `login` (login form, then
 * consent), starting at the platform's authorize URL. Ends where the platform's callback
 * answers (or at `stopAt`); `hops` holds every request of the flow.
 */
export async function oidcSignIn(
  b: SignInBrowser,
  authorizeUrl: string,
  login: string,
  stopAt?: (u: URL) => boolean,
): Promise<Page> {
  let page = await b.go(authorizeUrl, { stopAt });
  const hops = [...page.hops];
  for (let i = 0; i < 3 && page.status === 200; i++) {
    if (page.text.includes('name="prompt" value="login"'))
      page = await b.submit(page, { login, password: 'any' }, { stopAt });
    else if (page.text.includes('name="prompt" value="consent"'))
      page = await b.submit(page, {}, { stopAt });
    else break;
    hops.push(...page.hops);
  }
  return { ...page, hops };
}
