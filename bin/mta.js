#!/usr/bin/env node
// The `mta` executable: registers the TypeScript loader and runs src/cli.ts.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli.ts');
