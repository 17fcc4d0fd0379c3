// RFC 7672 matching (core/dane.ts) on certificates made by a test CA: which records are usable, DANE-EE by key or
// certificate (no name or expiry check), DANE-TA by the CA in the chain (name and expiry checked, chain verified).
import { createHash, X509Certificate } from 'node:crypto';
import { expect } from 'chai';
import { TestCa } from '../helpers/test-ca.js';
import { daneVerify, usableTlsa, type Tlsa } from '../../src/core/dane.js';

const hex = (b: Buffer, alg = 'sha256') => createHash(alg).update(b).digest('hex');
const der = (pem: string) => new X509Certificate(pem).raw;
const spki = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });

describe('core/dane: TLSA matching', function () {
  this.timeout(10000);
  const ca = new TestCa();
  const other = new TestCa();
  const leaf = ca.leaf(['mx.example.test']);
  const now = Date.now();
  const ee = (data: string, selector = 1, matching = 1): Tlsa => ({ usage: 3, selector, matching, data });
  const ta = (data: string): Tlsa => ({ usage: 2, selector: 0, matching: 1, data });
  const chain = [der(leaf.cert), der(ca.caPem)];

  it('keeps only DANE-TA/DANE-EE records with known selectors and matching types of the right length', () => {
    const d = 'ab'.repeat(32);
    const rs = [
      ee(d),
      { ...ee(d), usage: 1 },
      { ...ee(d), usage: 0 },
      ee(d, 2),
      ee(d, 1, 3),
      ee('ab', 1, 1),
      ee('01', 0, 0),
    ];
    expect(usableTlsa(rs)).to.deep.equal([ee(d), ee('01', 0, 0)]);
  });

  it('DANE-EE: the key (3 1 1), the certificate (3 0 1, 3 0 2, 3 1 0); no name nor expiry check', () => {
    expect(daneVerify(chain, [ee(hex(spki(leaf.cert)))], ['other.name'], now)).to.equal(null);
    expect(daneVerify(chain, [ee(hex(der(leaf.cert)), 0)], ['x'], now)).to.equal(null);
    expect(daneVerify(chain, [ee(hex(der(leaf.cert), 'sha512'), 0, 2)], ['x'], now)).to.equal(null);
    expect(daneVerify(chain, [ee(spki(leaf.cert).toString('hex'), 1, 0)], ['x'], now + 10 * 86400_000)).to.equal(null);
    expect(daneVerify(chain, [ee(hex(spki(ca.caPem)))], ['mx.example.test'], now)).to.include({
      result_type: 'tlsa-invalid',
    });
  });

  it('DANE-TA: the CA in the chain, the name and the dates checked', () => {
    const rec = [ta(hex(der(ca.caPem)))];
    expect(daneVerify(chain, rec, ['mx.example.test'], now)).to.equal(null);
    expect(daneVerify(chain, rec, ['elsewhere.test'], now)).to.include({ result_type: 'certificate-host-mismatch' });
    expect(daneVerify(chain, rec, ['mx.example.test'], now + 10 * 86400_000)).to.include({
      result_type: 'certificate-expired',
    });
    // The CA is not in the chain the server sent: nothing to anchor to.
    expect(daneVerify([der(leaf.cert)], rec, ['mx.example.test'], now)).to.include({ result_type: 'tlsa-invalid' });
  });

  it('DANE-TA: a matching CA that did not sign the leaf is not trusted', () => {
    const rec = [ta(hex(der(other.caPem)))];
    expect(daneVerify([der(leaf.cert), der(other.caPem)], rec, ['mx.example.test'], now)).to.include({
      result_type: 'certificate-not-trusted',
    });
  });
});
