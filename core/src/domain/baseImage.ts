/**
 * An environment's `base_image` (spec EnvironmentConfig; the SDK's `config` has no such field)
 * against the deployment's sandbox driver:
 * - `nomad`: served: the sandbox job runs the image with Nomad's docker task driver
 *   (core/src/adapters/nomad/command.ts, nomad/src/jobTemplate.ts);
 * - `local` (bubblewrap): only the host image exists, so any non-null base_image is refused
 *   with a 400 naming the field and the Nomad driver: at environment create/update, at session
 *   create (field `environment_id`, for environments stored before this check), and by the
 *   driver itself when a sandbox would start (core/src/adapters/bubblewrap/driver.ts);
 * - `none` (no sandboxes in this deployment): stored and served; no sandbox ever runs.
 *
 * Tested in test/base-image.test.ts.
 */
import { invalid } from '../errors.js';

export type SandboxDriverName = 'local' | 'nomad' | 'none';

/** Why `driver` cannot serve `baseImage`, or null when it can. */
export function baseImageProblem(
  driver: SandboxDriverName | undefined,
  baseImage: string | null | undefined,
): string | null {
  if (baseImage == null || driver !== 'local') return null;
  return `base_image ${JSON.stringify(baseImage)} needs the Nomad sandbox driver (SANDBOX_DRIVER=nomad, docker task driver); the local (bubblewrap) driver runs sandboxes only on the host image, so base_image must be null or omitted`;
}

/** Throws a 400 naming `field` when `driver` cannot serve `baseImage`. */
export function refuseUnservableBaseImage(
  driver: SandboxDriverName | undefined,
  baseImage: string | null | undefined,
  field = 'base_image',
): void {
  const problem = baseImageProblem(driver, baseImage);
  if (problem) throw invalid(field, problem);
}
