/**
 * An environment's `base_image` (spec EnvironmentConfig; the SDK's `config` has no such field)
 * against the deployment's sandbox driver:
 * - `nomad` with SANDBOX_NOMAD_BASE_IMAGES=true: served: the sandbox job runs the image with
 *   Nomad's docker task driver (core/src/sandbox/drivers/nomad/command.ts, nomad/src/jobTemplate.ts);
 * - `nomad` without it: refused (fail closed: a docker container has Docker's bridge network,
 *   not only the session proxy, until the operator firewalls it and opts in);
 * - `local` (bubblewrap): only the host image exists, so any non-null base_image is refused
 *   with a 400 naming the field and the Nomad driver;
 * - `none` (no sandboxes in this deployment): stored and served; no sandbox ever runs.
 * Refused at environment create/update (field base_image), at session create (field
 * environment_id, for environments stored before this check or under another driver), and by
 * the drivers themselves when a sandbox would start (bubblewrap driver; Nomad driver without
 * docker mounts).
 *
 * Tested in test/e2e/environments/base-image.test.ts.
 */
import { invalid } from '../errors.js';

export type SandboxDriverName = 'local' | 'nomad' | 'none';

/** What the deployment can serve (from the typed config's `sandbox`). */
export interface BaseImageSupport {
  sandboxDriver?: SandboxDriverName;
  /** SANDBOX_NOMAD_BASE_IMAGES=true. */
  nomadBaseImages?: boolean;
}

/** Why the deployment cannot serve `baseImage`, or null when it can. */
export function baseImageProblem(
  support: BaseImageSupport,
  baseImage: string | null | undefined,
): string | null {
  if (baseImage == null) return null;
  const image = JSON.stringify(baseImage);
  if (support.sandboxDriver === 'local')
    return `base_image ${image} needs the Nomad sandbox driver (SANDBOX_DRIVER=nomad, docker task driver); the local (bubblewrap) driver runs sandboxes only on the host image, so base_image must be omitted`;
  if (support.sandboxDriver === 'nomad' && !support.nomadBaseImages)
    return `base_image ${image} is not enabled on this deployment: the Nomad driver runs base images with the docker task driver only when the operator sets SANDBOX_NOMAD_BASE_IMAGES=true`;
  return null;
}

/** Throws a 400 naming `field` when the deployment cannot serve `baseImage`. */
export function refuseUnservableBaseImage(
  support: BaseImageSupport,
  baseImage: string | null | undefined,
  field = 'base_image',
): void {
  const problem = baseImageProblem(support, baseImage);
  if (problem) throw invalid(field, problem);
}
