/**
 * The object keys every ObjectStore (./port.ts) accepts, checked the same way by the directory
 * and GridFS adapters: `/`-separated relative paths, no empty, `.` or `..` segment, no leading
 * `/`, no backslash or NUL, at most 1024 bytes; anything else is an InvalidObjectKeyError
 * naming the key. Proved by the object-store contract (core/test/objectStore.contract.ts).
 */
export class InvalidObjectKeyError extends Error {
  override readonly name = 'InvalidObjectKeyError';
}

export function validateObjectKey(key: string, what = 'object key'): void {
  const bad = (why: string) => new InvalidObjectKeyError(`invalid ${what} '${key}': ${why}`);
  if (typeof key !== 'string' || key === '') throw bad('must be a non-empty string');
  if (Buffer.byteLength(key) > 1024) throw bad('longer than 1024 bytes');
  if (key.startsWith('/')) throw bad('must not be an absolute path');
  if (key.includes('\\') || key.includes('\0')) throw bad('must not contain a backslash or NUL');
  for (const seg of key.split('/')) {
    if (seg === '') throw bad('must not contain an empty segment');
    if (seg === '.' || seg === '..') throw bad(`must not contain a '${seg}' segment`);
  }
}
