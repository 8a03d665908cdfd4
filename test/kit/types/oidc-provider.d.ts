// The part of oidc-provider (no bundled types) the sign-in fixture uses (test/kit/fixtures/oidcProvider.ts).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface KoaContext {
    path: string;
    status: number;
    body: unknown;
  }
  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }
  export default class Provider {
    constructor(
      issuer: string,
      configuration: Record<string, unknown> & {
        findAccount?: (ctx: unknown, id: string) => Promise<Account | undefined>;
      },
    );
    use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
