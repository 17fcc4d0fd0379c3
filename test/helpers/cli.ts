// Runs the `mta` executable as a real child process and returns its exit code, stdout and stderr.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const BIN = path.resolve('bin/mta.js');

export async function mta(args: string[], env: Record<string, string>) {
  try {
    const r = await run(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH!, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
