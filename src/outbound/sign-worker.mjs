// Worker-thread entry of signer.ts: registers tsx (the service runs its TypeScript source) and loads
// sign-worker.ts. Plain JavaScript so that a worker can start without a loader.
import { register } from 'tsx/esm/api';

register();
await import('./sign-worker.ts');
