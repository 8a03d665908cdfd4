/**
 * The web console's settings (core/src/console). Schemas only; core/src/config/schema.ts reads them.
 */
import { nullable, section, str } from './schema.js';

export const ConsoleSection = section({
  consoleSessionSecret: nullable(
    str('CONSOLE_SESSION_SECRET', {
      secret: true,
      minLength: 32,
      default: null,
      docDefault: 'derived from PLATFORM_ROOT_SECRET (HKDF, its own label)',
      description:
        '≥ 32 chars; key material of the console sign-in cookie (`af_console`). Changing it signs every console user out',
    }),
  ),
  publicUrl: nullable(
    str('PUBLIC_URL', {
      default: null,
      description:
        "the platform's address as browsers reach it (`https://…`): the console cookie is `Secure` when it is https",
    }),
  ),
});
