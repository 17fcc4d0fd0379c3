// The inbound feature: the SMTP listener for bounces (DSN) and complaints (ARF) as a component,
// announced as `smtp=HOST:PORT` (the real port when MTA_SMTP_PORT is 0).
import type { FeatureFactory } from './feature.js';
import { createInboundListener } from '../inbound/server.js';

export const feature: FeatureFactory = (ctx) => {
  const listener = createInboundListener(ctx);
  return {
    components: [
      {
        name: 'inbound-smtp',
        start: () => listener.start(),
        stop: () => listener.stop(),
        quiesce: () => void listener.stop(),
        reload: () => listener.reloadTls(),
        address: () => {
          const a = listener.address();
          if (!a) return null;
          return `smtp=${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
        },
      },
    ],
  };
};
