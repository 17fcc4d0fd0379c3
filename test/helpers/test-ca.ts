// A certificate authority made in the test (openssl): a CA and leaf certificates for the names asked, so TLS
// verification (MTA-STS policy fetches, MX certificates) runs against a trusted chain without leaving loopback.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './service.js';

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

export interface Leaf {
  key: string;
  cert: string;
}

export class TestCa {
  readonly dir = tempDir('mta-ca-');
  private n = 0;
  constructor() {
    this.ssl(
      'req',
      '-x509',
      ...EC,
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=mta test CA',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
    );
  }
  /** The CA certificate's file (for MTA_TLS_CA_FILE). */
  get caFile(): string {
    return path.join(this.dir, 'ca.pem');
  }

  /** The CA certificate (PEM): appended to a leaf, the chain a DANE-TA(2) server sends. */
  get caPem(): string {
    return fs.readFileSync(this.caFile, 'utf8');
  }

  /** A key and certificate for `names` (subjectAltName DNS entries), signed by this CA. */
  leaf(names: string[]): Leaf {
    const base = path.join(this.dir, `leaf${++this.n}`);
    const ext = `${base}.ext`;
    fs.writeFileSync(ext, `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\n`);
    this.ssl('req', ...EC, '-nodes', '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', `/CN=${names[0]}`);
    this.ssl(
      'x509',
      ...['-req', '-in', `${base}.csr`, '-CA', this.caFile, '-CAkey', path.join(this.dir, 'ca.key')],
      ...['-CAcreateserial', '-days', '2', '-out', `${base}.pem`, '-extfile', ext],
    );
    return { key: fs.readFileSync(`${base}.key`, 'utf8'), cert: fs.readFileSync(`${base}.pem`, 'utf8') };
  }

  private ssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'pipe' });
  }
}
