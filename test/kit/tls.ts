/** TLS material for the tests' HTTPS fixtures (openssl; trust `certFile` with EGRESS_CA_CERTS). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A self-signed P-256 certificate for 127.0.0.1 and localhost, valid 2 days, in a temp dir. */
export function selfSignedCert(cn: string): { dir: string; keyFile: string; certFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tls-fixture-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${cn}`,
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-days',
    '2',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  return { dir, keyFile, certFile };
}
