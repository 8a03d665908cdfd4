import {
  createCipheriv,
  createDecipheriv,
  hash,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';

/**
 * Secrets at rest: AES-256-GCM under a key derived (HKDF-SHA256) from PLATFORM_ROOT_SECRET.
 * Format `v1.<iv>.<tag>.<ciphertext>` (base64url). The purpose string binds a ciphertext to its
 * use (associated data), so a model-card key cannot be replayed as a vault credential.
 */
export class SecretBox {
  private readonly key: Buffer;
  constructor(rootSecret: string) {
    if (rootSecret.length < 32)
      throw new Error('PLATFORM_ROOT_SECRET must be at least 32 characters');
    this.key = Buffer.from(hkdfSync('sha256', rootSecret, 'agentfleet', 'secret-box-v1', 32));
  }
  seal(plaintext: string, purpose: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(Buffer.from(purpose));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return [
      'v1',
      iv.toString('base64url'),
      c.getAuthTag().toString('base64url'),
      ct.toString('base64url'),
    ].join('.');
  }
  open(sealed: string, purpose: string): string {
    const [v, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined)
      throw new Error('unrecognised secret format');
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    d.setAAD(Buffer.from(purpose));
    d.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
  }
}

/** Hex SHA-256 (one-shot `hash`: no Hash object per call; every authenticated request hashes its key). */
export const sha256 = (s: string) => hash('sha256', s, 'hex');
export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url');
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
export const last4 = (s: string) => (s.length <= 4 ? '****' : `…${s.slice(-4)}`);
