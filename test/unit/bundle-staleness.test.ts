// bin/mta.js runs the precompiled bundle only while it is newer than every source it was built from; otherwise the
// sources through tsx (~30-40 MiB more resident memory: BENCHMARKS.md, session 18), which `mta serve` warns about and
// the benches avoid by building first. A checkout of its own in a temp folder, mtimes set by hand.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bundleStaleness } from '../../bin/bundle.js';
import { tempDir } from '../helpers/service.js';

describe('bundle staleness (bin/bundle.js)', () => {
  const checkout = () => {
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'dist'));
    fs.mkdirSync(path.join(root, 'src/outbound'), { recursive: true });
    const files = ['src/cli.ts', 'src/outbound/loop.ts'];
    for (const f of files) fs.writeFileSync(path.join(root, f), '// source\n');
    fs.writeFileSync(path.join(root, 'dist/inputs.json'), JSON.stringify(files));
    fs.writeFileSync(path.join(root, 'dist/mta.mjs'), '// bundle\n');
    const at = (f: string, t: number) => fs.utimesSync(path.join(root, f), t, t);
    for (const f of files) at(f, 1_000_000);
    at('dist/mta.mjs', 2_000_000);
    return { root, url: pathToFileURL(root + '/'), at };
  };

  it('is fresh (null) while the bundle is newer than every input, and names the first input edited after it', () => {
    const c = checkout();
    expect(bundleStaleness(c.url)).to.equal(null);
    c.at('src/outbound/loop.ts', 3_000_000);
    expect(bundleStaleness(c.url)).to.equal('src/outbound/loop.ts');
    c.at('dist/mta.mjs', 4_000_000); // built again
    expect(bundleStaleness(c.url)).to.equal(null);
  });

  it('names an input that is gone, and says absent without a bundle or its list of inputs', () => {
    const c = checkout();
    fs.rmSync(path.join(c.root, 'src/cli.ts'));
    expect(bundleStaleness(c.url)).to.equal('src/cli.ts');
    fs.rmSync(path.join(c.root, 'dist/inputs.json'));
    expect(bundleStaleness(c.url)).to.equal('absent');
    const d = checkout();
    fs.rmSync(path.join(d.root, 'dist/mta.mjs'));
    expect(bundleStaleness(d.url)).to.equal('absent');
  });

  it("is this checkout's own by default (the one bin/mta.js and the benches ask about)", () => {
    const own = bundleStaleness();
    const url = pathToFileURL(path.resolve('.') + '/');
    expect(own).to.equal(bundleStaleness(url));
  });
});
