// Stopping (SIGTERM): once `drain()` is called every new request, on a connection still open (keep-alive), is answered
// 503 shutting_down with `Connection: close` before any of it is read, so nothing new is accepted while the requests
// in flight finish and the delivery loop drains. The listener itself stops accepting connections (service.ts).
import type http from 'node:http';
import type { Ctx } from '../services/context.js';
import { errorBody } from './middleware.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export function drainable(app: Ctx, handle: Handler): { handle: Handler; drain(): void } {
  let draining = false;
  const body = JSON.stringify(
    errorBody(
      app.config.docsUrl,
      'api_error',
      'shutting_down',
      'The service is stopping; nothing was stored. Retry on another node, or after the restart.',
    ),
  );
  return {
    handle: (req, res) => {
      if (!draining) return handle(req, res);
      res.writeHead(503, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
        'Retry-After': '5',
        Connection: 'close',
      });
      res.end(body);
    },
    drain: () => {
      draining = true;
    },
  };
}
