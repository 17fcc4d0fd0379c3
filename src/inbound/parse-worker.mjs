// Worker-thread entry of parse-pool.ts: registers tsx (the service runs its TypeScript source) and
// loads parse-worker.ts. Plain JavaScript so that a worker can start without a loader.
import { register } from 'tsx/esm/api';

register();
await import('./parse-worker.ts');
