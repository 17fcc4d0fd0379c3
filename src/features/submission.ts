// The SMTP submission feature: the authenticated submission listener (STARTTLS port, optional implicit-TLS port) as a
// component, announced as `submission=HOST:PORT` (and `submissions=HOST:PORT`), the real ports when configured as 0.
import type { FeatureFactory } from './feature.js';
import { createSubmissionListener } from '../submission/server.js';

export const feature: FeatureFactory = (ctx) => {
  const listener = createSubmissionListener(ctx);
  return {
    components: [
      {
        name: 'submission-smtp',
        start: () => listener.start(),
        stop: () => listener.stop(),
        quiesce: () => void listener.stop(),
        reload: () => listener.reloadTls(),
        address: () => {
          const list = listener.addresses();
          if (!list.length) return null;
          return list
            .map(({ name, address: a }) => `${name}=${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`)
            .join(' ');
        },
      },
    ],
  };
};
