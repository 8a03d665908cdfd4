/**
 * The web console's settings (core/src/console). Schemas only; core/src/config/schema.ts reads them.
 */
import { nullable, section, str } from './schema.js';

const httpsUrl =
  (what: string) =>
  (v: string | null, _ctx: unknown, name: string): string | false => {
    if (v === null) return false;
    try {
      const u = new URL(v);
      if (u.protocol !== 'https:') return `${name} must be an https:// URL (${what})`;
      return false;
    } catch {
      return `${name} must be an absolute https:// URL (${what})`;
    }
  };

export const ConsoleSection = section(
  {
    consoleSessionSecret: nullable(
      str('CONSOLE_SESSION_SECRET', {
        secret: true,
        minLength: 32,
        default: null,
        docDefault:
          'embedded: generated into `DATA_DIR/console-session-secret`; fleet: required for the console (unset: the console is off)',
        description:
          '≥ 32 chars; key material of the console sign-in cookie (`af_console`). Changing it signs every console user out',
      }),
    ),
    publicUrl: nullable(
      str('PUBLIC_URL', {
        default: null,
        description:
          "the platform's origin as browsers reach it (`https://…`): sign-in callbacks are `PUBLIC_URL/v1/svc/oauth/<provider>/callback`; the console cookie is `Secure` when it is https. Required with an identity provider",
      }),
    ),
    oidcIssuer: nullable(
      str('OIDC_ISSUER', {
        default: null,
        check: httpsUrl('the OpenID provider, discovered at /.well-known/openid-configuration'),
        description:
          'console sign-in through OpenID Connect (provider `oidc`): the issuer URL (Google, Okta, Keycloak, Auth0, Entra …). A private address also needs EGRESS_ALLOW_PRIVATE_HOSTS',
      }),
    ),
    oidcClientId: nullable(
      str('OIDC_CLIENT_ID', {
        default: null,
        description: "the console's client id at OIDC_ISSUER",
      }),
    ),
    oidcClientSecret: nullable(
      str('OIDC_CLIENT_SECRET', {
        secret: true,
        default: null,
        description: "the console's client secret at OIDC_ISSUER (client_secret_basic)",
      }),
    ),
    githubOAuthClientId: nullable(
      str('GITHUB_OAUTH_CLIENT_ID', {
        default: null,
        description: 'console sign-in with GitHub (provider `github`): the OAuth app client id',
      }),
    ),
    githubOAuthClientSecret: nullable(
      str('GITHUB_OAUTH_CLIENT_SECRET', {
        secret: true,
        default: null,
        description: 'the GitHub OAuth app client secret',
      }),
    ),
    githubWebUrl: str('GITHUB_WEB_URL', {
      default: 'https://github.com',
      check: httpsUrl('GitHub, or GitHub Enterprise Server'),
      description:
        "GitHub's web origin (OAuth authorize and token endpoints); set for GitHub Enterprise Server",
    }),
    githubApiUrl: str('GITHUB_API_URL', {
      default: 'https://api.github.com',
      check: httpsUrl("GitHub's REST API"),
      description:
        "GitHub's REST API base (`https://HOST/api/v3` on GitHub Enterprise Server): the signed-in user and their verified emails",
    }),
  },
  {
    rules: (c) => {
      const oidc = [c.oidcIssuer, c.oidcClientId, c.oidcClientSecret];
      const github = [c.githubOAuthClientId, c.githubOAuthClientSecret];
      return [
        oidc.some(Boolean) &&
          !oidc.every(Boolean) &&
          'OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set together',
        github.some(Boolean) &&
          !github.every(Boolean) &&
          'GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_CLIENT_SECRET are set together',
        (oidc.some(Boolean) || github.some(Boolean)) &&
          !c.publicUrl &&
          'PUBLIC_URL is required with an identity provider (OIDC_* or GITHUB_OAUTH_*): it is where sign-in callbacks return',
      ];
    },
  },
);
